/**
 * What the reference does to a request before a chat template sees it
 * (`common_chat_templates_apply_jinja` and the specialized handlers in `chat.cpp`), so that our
 * prompt is the one llama.cpp users get. Built once per request, from the checked request
 * (request.ts) and the template's facts (../template-facts.ts):
 *
 *  1. messages -> the reference's JSON form: empty content becomes "", tool-call arguments stay
 *     JSON text, empty reasoning/name/id fields are dropped;
 *  2. content shape by capability: string-only templates get typed parts joined, typed-only
 *     templates get strings wrapped as `[{type: "text", text}]`;
 *  3. `developer` -> `system` (unless the family keeps it); a system message merged into the next
 *     message where the template ignores the system role; tool-call arguments parsed into objects
 *     where the template reads them as objects (the cut-arguments pass, with its warnings);
 *  4. the hooks of the template's family and quirks (../families/): message rewrites, variables;
 *  5. the context: bos/eos, enable_thinking, tools (normalized, only when non-empty), `datetime` and
 *     `date_string`, chat_template_kwargs; add_generation_prompt is set by the renderer.
 */
import { LlamapegError } from "../../errors.js";
import { cloneData, parseJsonText, preserveReasoningVars, strftime } from "../../jinja/index.js";
import type { ChatMessage } from "../messages.js";
import { concatContentParts } from "../messages.js";
import { closeCutJson } from "../partial-json.js";
import { type TemplateFacts, fitContent } from "../template-facts.js";
import type { ChatTool } from "../tools.js";
import type { NormalizedApplyRequest } from "./request.js";

type JsonObject = Record<string, unknown>;

/** A request's template variables, and what preparing them had to say. */
export interface TemplateInput {
  /**
   * The template variables, add_generation_prompt left out. Parsed arguments hold `Map`s and
   * `JsonFloat`s (key order, float-ness): pass them to the renderer as they are;
   * `structuredClone` would lose them.
   */
  variables: JsonObject;
  /** Earlier tool calls whose arguments the template gets other than the model wrote them. */
  warnings: string[];
}

function invalid(message: string, where: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", message, { where });
}

/**
 * The cut-arguments pass, for a template that reads tool-call arguments as objects: earlier
 * answers of the model whose arguments are no JSON (a call cut by max_tokens, text a parse failure
 * kept) are closed where they were cut, or {} for text that is no JSON at all. The reference
 * refuses such a conversation; we render it and warn.
 */
function argumentObject(text: string, where: string, warnings: string[]): unknown {
  const json = closeCutJson(text);
  if (json === undefined) {
    warnings.push(`${where}: not JSON, and this template reads arguments as an object: it gets {}`);
    return new Map();
  }
  if (json.closed) warnings.push(`${where}: a cut JSON object; the template gets it closed as ${json.text}`);
  try {
    return parseJsonText(json.text);
  } catch {
    return new Map();
  }
}

/** `common_chat_msg::to_json_oaicompat(false)`, arguments as objects when `args` is given. */
function messageToJson(m: ChatMessage, i: number, args: { warnings: string[] } | null): JsonObject {
  const out: JsonObject = { role: m.role };
  const parts = Array.isArray(m.content) ? m.content : [];
  const text = typeof m.content === "string" ? m.content : "";
  if (text !== "") out.content = text;
  else if (parts.length > 0)
    out.content = parts.some((p) => p.type === "media_marker") ? concatContentParts(parts) : parts.map((p) => ({ type: p.type, text: p.text }));
  else out.content = "";
  if (m.reasoning_content) out.reasoning_content = m.reasoning_content;
  if (m.name) out.name = m.name;
  if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
  if (m.tool_calls && m.tool_calls.length > 0)
    out.tool_calls = m.tool_calls.map((c, j) => {
      const where = `messages[${i}].tool_calls[${j}].function.arguments`;
      const value = args === null ? c.function.arguments : argumentObject(c.function.arguments, where, args.warnings);
      const tc: JsonObject = { type: "function", function: { name: c.function.name, arguments: value } };
      if (c.id) tc.id = c.id;
      return tc;
    });
  return out;
}

/** `common_chat_tools_to_json_oaicompat`: the checked tools in the reference's form. */
function toolsToJson(tools: readonly ChatTool[] | null): JsonObject[] {
  return (tools ?? []).map((t) => ({
    type: "function",
    function: { name: t.function.name, description: t.function.description ?? "", parameters: t.function.parameters === undefined ? {} : cloneData(t.function.parameters) },
  }));
}

/** The tools as the prompt shows them: all of them, or the named one alone. */
export function shownTools(req: NormalizedApplyRequest): ChatTool[] | null {
  if (req.tools === null || req.namedTool === null) return req.tools;
  return req.tools.filter((t) => t.function.name === req.namedTool);
}

/** The template variables of a checked request, `tools` the tools the prompt shows. */
export function templateInput(facts: TemplateFacts, req: NormalizedApplyRequest, tools: readonly ChatTool[] | null): TemplateInput {
  const { caps, family } = facts;
  const src = facts.source;
  const warnings: string[] = [];

  let parsed = req.messages;
  for (const q of facts.quirks) parsed = q.rewriteChatMessages?.(parsed) ?? parsed;
  parsed = family?.rewriteChatMessages?.(parsed) ?? parsed;
  const args = caps.supportsObjectArguments ? { warnings } : null;
  let messages = fitContent(caps, parsed.map((m, i) => messageToJson(m, i, args)));

  if (family?.keepsDeveloperRole !== true) messages = messages.map((m) => (m.role === "developer" ? { ...m, role: "system" } : m));
  if (!caps.supportsSystemRole && messages[0]?.role === "system") {
    const [first, second, ...rest] = messages;
    if (second === undefined) messages = [];
    else {
      if (typeof first!.content !== "string" || typeof second.content !== "string")
        invalid("cannot merge a system message with typed content into the next message", "messages[0]");
      messages = [{ ...second, content: `${first!.content}\n${second.content}` }, ...rest];
    }
  }
  if (caps.supportsToolCalls) messages = messages.map((m) => (m.tool_calls !== undefined && !("content" in m) ? { ...m, content: "" } : m));
  messages = family?.rewriteMessages?.(messages, src) ?? messages;

  // a family's handler may build the messages itself
  const override = family?.prepareMessages?.(messages, src);
  const toolsJson = toolsToJson(tools);

  const variables: JsonObject = {
    // the reference normalizes the content shape again here unless a handler built the messages
    messages: override ?? fitContent(caps, messages),
    bos_token: req.bosToken,
    eos_token: req.eosToken,
    enable_thinking: req.enableThinking,
  };
  if (toolsJson.length > 0) variables.tools = toolsJson;
  variables.datetime = strftime(req.now, "%b %d %Y");
  variables.date_string = strftime(req.now, "%d %b %Y");
  if (req.chatTemplateKwargs !== undefined) Object.assign(variables, structuredClone(req.chatTemplateKwargs));
  Object.assign(variables, family?.templateVariables?.(src, req.jsonSchema !== null ? { json_schema: req.jsonSchema } : {}) ?? {});
  if (typeof variables.preserve_reasoning === "boolean") Object.assign(variables, preserveReasoningVars(variables.preserve_reasoning));
  if (typeof variables.reasoning_effort === "string" && variables.reasoning_effort !== "")
    variables.reasoning_strength = variables.reasoning_effort;
  return { variables, warnings };
}
