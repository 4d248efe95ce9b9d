/**
 * What the reference does to a request before a chat template sees it
 * (`common_chat_templates_apply_jinja` and the specialized handlers in `chat.cpp`), so that our
 * prompt is the one llama.cpp users get:
 *
 *  1. messages -> the reference's JSON form: empty content becomes "", tool-call arguments stay
 *     JSON text, empty reasoning/name/id fields are dropped;
 *  2. content shape by capability: string-only templates get typed parts joined, typed-only
 *     templates get strings wrapped as `[{type: "text", text}]`;
 *  3. `developer` -> `system` (except GPT-OSS); a system message merged into the next message where
 *     the template ignores the system role; tool-call arguments parsed into objects where the
 *     template reads them as objects;
 *  4. per-family message rewrites (the family modules in ../formats/: Ministral, GPT-OSS, LFM2,
 *     Gemma 4, DeepSeek V4) and the StepFun whitespace trim;
 *  5. the context: bos/eos, enable_thinking, tools (normalized, only when non-empty), `datetime` and
 *     `date_string`, chat_template_kwargs, add_generation_prompt (only when true).
 */
import { LlamapegError } from "../../errors.js";
import { detectFamily, detectSpecializedTemplate, type FamilyName } from "../formats/registry.js";
import { type ChatMessage, concatContentParts, parseChatMessages } from "../messages.js";
import { type TemplateCaps, preserveReasoningVars, templateCaps } from "./caps.js";
import { closeCutJson } from "../partial-json.js";
import { parseJsonText } from "./json-text.js";
import { cloneData } from "./plain-copy.js";
import { patchTemplateSource } from "./source-patches.js";
import { strftime } from "./strftime.js";

type Json = unknown;
type JsonObject = Record<string, Json>;

/** A render request; field names are OpenAI's / llama.cpp's (the names templates expect). */
export interface ChatRenderRequest {
  /** OpenAI messages (content as a string, parts or null; arguments as JSON text or objects). */
  messages: readonly unknown[];
  /** OpenAI tools (`[{type: "function", function: {name, description?, parameters?}}]`). */
  tools?: readonly unknown[] | null;
  /** Default true, as in llama.cpp. */
  add_generation_prompt?: boolean;
  /** Default true, as in llama.cpp. */
  enable_thinking?: boolean;
  /** Extra template variables (override the defaults above, as in llama.cpp). */
  chat_template_kwargs?: Record<string, unknown>;
  bos_token?: string;
  eos_token?: string;
  /** What `strftime_now`, `datetime` and `date_string` show (local time). Default: now. */
  now?: Date;
  /** A JSON-schema response format; only DeepSeek V4's template prints it. */
  json_schema?: unknown;
  /** The model adds BOS/EOS itself: strip a leading bos_token / trailing eos_token from the prompt. */
  add_bos?: boolean;
  add_eos?: boolean;
  /**
   * llamapeg: true prints floats as llama.cpp's engine does (`%g` in tojson, 6 significant digits)
   * instead of as Python's Jinja (full precision, `1e-09`). Default false. See docs/templates.md.
   */
  reference_mode?: boolean;
}

/** The model family a template source belongs to (formats/registry.ts), undefined for the analysis path. */
export type SpecializedKind = FamilyName;
export { detectSpecializedTemplate };

export interface PreparedChatContext {
  /** The patched, normalized source that is rendered. */
  source: string;
  caps: TemplateCaps;
  specialized: SpecializedKind | undefined;
  /**
   * The template variables, add_generation_prompt left out (set it to true to get the generation
   * prompt). Parsed arguments hold `Map`s and `JsonFloat`s (key order, float-ness): pass them to
   * `renderTemplate` as they are; `structuredClone` would lose them.
   */
  variables: JsonObject;
  /** Post-processing of every rendered text: BOS/EOS stripping where the model adds them. */
  finish(prompt: string): string;
  /** What `finish` keeps of `prompt`: `prompt.slice(start, end)`. */
  finishRange(prompt: string): [start: number, end: number];
}

function invalid(message: string, where: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", message, { where });
}

/** C isspace() trim, as the reference's trim_whitespace. */
const trimWs = (s: string): string => s.replace(/^[ \t\n\v\f\r]+/, "").replace(/[ \t\n\v\f\r]+$/, "");

/** `common_chat_msg::to_json_oaicompat(false)`. */
function messageToJson(m: ChatMessage): JsonObject {
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
    out.tool_calls = m.tool_calls.map((c) => {
      const tc: JsonObject = { type: "function", function: { name: c.function.name, arguments: c.function.arguments } };
      if (c.id) tc.id = c.id;
      return tc;
    });
  return out;
}

/** `messages_inp_normalizer`: fit the content shape to what the template accepts. */
function normalizeContent(messages: JsonObject[], caps: TemplateCaps): JsonObject[] {
  const onlyString = caps.supportsStringContent && !caps.supportsTypedContent;
  const onlyTyped = !caps.supportsStringContent && caps.supportsTypedContent;
  if (!onlyString && !onlyTyped) return messages;
  return messages.map((m) => {
    if (!("content" in m)) return m;
    const c = m.content;
    if (onlyTyped && typeof c === "string") return { ...m, content: [{ type: "text", text: c }] };
    if (onlyString && Array.isArray(c)) {
      const parts = (c as JsonObject[])
        .filter((p) => p.type === "text" || p.type === "media_marker")
        .map((p) => ({ type: p.type as "text" | "media_marker", text: typeof p.text === "string" ? p.text : "" }));
      return { ...m, content: concatContentParts(parts) };
    }
    return m;
  });
}

/**
 * The content-shape normalization alone (`messages_inp_normalizer` with the template's probed
 * capabilities), for callers that build reference-form messages themselves, such as the template
 * analysis probes (`common_chat_template_direct_apply` applies exactly this).
 */
export function normalizeMessageContent(templateSource: string, messages: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return normalizeContent([...messages], templateCaps(patchTemplateSource(templateSource)));
}

/** `common_chat_tools_parse_oaicompat` + `common_chat_tools_to_json_oaicompat`. */
function normalizeTools(tools: readonly unknown[] | null | undefined): JsonObject[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) invalid("tools must be an array", "tools");
  return tools.map((t, i) => {
    const where = `tools[${i}]`;
    if (typeof t !== "object" || t === null) invalid(`${where}: expected an object`, where);
    const tool = t as JsonObject;
    if (tool.type !== "function") invalid(`${where}.type: unsupported tool type ${JSON.stringify(tool.type)}`, `${where}.type`);
    const fn = tool.function as JsonObject | undefined;
    if (typeof fn !== "object" || fn === null) invalid(`${where}.function: missing`, `${where}.function`);
    if (typeof fn.name !== "string") invalid(`${where}.function.name: expected a string`, `${where}.function.name`);
    const description = fn.description === undefined ? "" : fn.description;
    const parameters = fn.parameters === undefined ? {} : cloneData(fn.parameters);
    return { type: "function", function: { name: fn.name, description, parameters } };
  });
}

function parseArguments(messages: JsonObject[]): void {
  for (const m of messages) {
    if (!Array.isArray(m.tool_calls)) continue;
    for (const tc of m.tool_calls as JsonObject[]) {
      const fn = tc.function as JsonObject | undefined;
      if (fn && typeof fn.arguments === "string") {
        // An earlier answer of the model may hold a call cut by max_tokens: its arguments are
        // closed where they stand. Text that is no JSON at all cannot be an object: {} (the
        // reference refuses such a conversation; applyChatTemplate warns about both).
        const json = closeCutJson(fn.arguments);
        try {
          fn.arguments = json === undefined ? new Map() : parseJsonText(json.text);
        } catch {
          fn.arguments = new Map();
        }
      }
    }
  }
}

function formatKwargs(kwargs: Record<string, unknown> | undefined): JsonObject {
  if (kwargs === undefined) return {};
  if (typeof kwargs !== "object" || kwargs === null || Array.isArray(kwargs)) invalid("chat_template_kwargs must be an object", "chat_template_kwargs");
  return structuredClone(kwargs) as JsonObject;
}

/** Prepares everything but the rendering itself. */
export function prepareChatContext(templateSource: string, request: ChatRenderRequest): PreparedChatContext {
  const src = patchTemplateSource(templateSource);
  const caps = templateCaps(src);
  const family = detectFamily(src);
  const kind = family?.name;
  const now = request.now ?? new Date();

  let parsed = parseChatMessages(request.messages);
  if (src.includes("You have access to the following functions in JSONSchema format")) {
    // StepFun: stray whitespace sends the model into reasoning loops, so the reference trims it
    parsed = parsed.map((m) => ({
      ...m,
      content: typeof m.content === "string" ? trimWs(m.content) : Array.isArray(m.content) ? m.content.map((p) => (p.type === "text" ? { ...p, text: trimWs(p.text) } : p)) : m.content,
      ...(m.reasoning_content !== undefined ? { reasoning_content: trimWs(m.reasoning_content) } : {}),
    }));
  }
  let messages = normalizeContent(parsed.map(messageToJson), caps);

  if (!src.includes("<|channel|>")) messages = messages.map((m) => (m.role === "developer" ? { ...m, role: "system" } : m));
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
  if (caps.supportsObjectArguments) {
    messages = structuredClone(messages);
    parseArguments(messages);
  }
  messages = family?.rewriteMessages?.(messages, src) ?? messages;

  // a family's handler may build the messages itself
  const override = family?.prepareMessages?.(messages, src);
  const tools = normalizeTools(request.tools);

  const variables: JsonObject = {
    // the reference normalizes the content shape again here unless a handler built the messages
    messages: override ?? normalizeContent(messages, caps),
    bos_token: request.bos_token ?? "",
    eos_token: request.eos_token ?? "",
    enable_thinking: request.enable_thinking ?? true,
  };
  if (tools.length > 0) variables.tools = tools;
  variables.datetime = strftime(now, "%b %d %Y");
  variables.date_string = strftime(now, "%d %b %Y");
  Object.assign(variables, formatKwargs(request.chat_template_kwargs));
  Object.assign(variables, family?.templateVariables?.(src, request) ?? {});
  if (typeof variables.preserve_reasoning === "boolean") Object.assign(variables, preserveReasoningVars(variables.preserve_reasoning));
  if (typeof variables.reasoning_effort === "string" && variables.reasoning_effort !== "")
    variables.reasoning_strength = variables.reasoning_effort;

  const bos = request.bos_token ?? "";
  const eos = request.eos_token ?? "";
  const finishRange = (prompt: string): [number, number] => {
    const start = request.add_bos && prompt.startsWith(bos) ? bos.length : 0;
    const end = request.add_eos && prompt.endsWith(eos) && prompt.length - eos.length >= start ? prompt.length - eos.length : prompt.length;
    return [start, end];
  };
  const finish = (prompt: string): string => prompt.slice(...finishRange(prompt));
  return { source: src, caps, specialized: kind, variables, finish, finishRange };
}
