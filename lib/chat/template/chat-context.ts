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
 *  4. per-family message rewrites of the specialized formats (Ministral, GPT-OSS, LFM2, Gemma 4,
 *     DeepSeek V4) and the StepFun whitespace trim;
 *  5. the context: bos/eos, enable_thinking, tools (normalized, only when non-empty), `datetime` and
 *     `date_string`, chat_template_kwargs, add_generation_prompt (only when true).
 */
import { LlamapegError } from "../../errors.js";
import { type ChatMessage, concatContentParts, parseChatMessages } from "../messages.js";
import { type TemplateCaps, preserveReasoningVars, templateCaps } from "./caps.js";
import { parseJsonText } from "./json-text.js";
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
}

/** The specialized formats of the reference, detected from the template source (same order). */
export type SpecializedKind =
  | "ministral-3"
  | "gpt-oss"
  | "muse-glimmer"
  | "functionary-v3.2"
  | "kimi-k2"
  | "kimi-k3"
  | "cohere2-moe"
  | "lfm2"
  | "lfm2.5"
  | "gigachat-v3"
  | "minimax-m3"
  | "deepseek-v3.2"
  | "gemma4"
  | "minicpm5"
  | "qwen3-coder";

export function detectSpecializedTemplate(src: string): SpecializedKind | undefined {
  const has = (s: string): boolean => src.includes(s);
  if (has("[SYSTEM_PROMPT]") && has("[TOOL_CALLS]") && has("[ARGS]") && !has("[CALL_ID]")) return "ministral-3";
  if (has("<|channel|>")) return "gpt-oss";
  if (has("<atem:function_calls>") && has("<|eom|>")) return "muse-glimmer";
  if (has(">>>all") && has(">>>${recipient}")) return "functionary-v3.2";
  if (has("<|tool_calls_section_begin|>") && has("<|tool_call_begin|>")) return "kimi-k2";
  if (has("<|open|>") && has("<|close|>") && has("<|end_of_msg|>")) return "kimi-k3";
  if (has("<|START_TEXT|>") && has("<|START_ACTION|>")) return "cohere2-moe";
  if (has("<|tool_list_start|>") && has("<|tool_list_end|>")) return "lfm2";
  if (has("List of tools: [") && !has("<|tool_list_start|>")) return "lfm2.5";
  if (has("<|role_sep|>") && has("<|message_sep|>") && !has("<|function_call|>")) return "gigachat-v3";
  if (has("]<]minimax[>[") && has("<tool_call>") && has("<invoke name=")) return "minimax-m3";
  if (has("dsml_token") && has("DSML") && (has("function_calls") || has("tool_calls"))) return "deepseek-v3.2";
  if (has("'<|tool_call>call:'")) return "gemma4";
  if (has("Tool usage guidelines:") && has('<function name="') && has('<param name="')) return "minicpm5";
  if (has("<tool_call>") && has("<function=") && has("<parameter=")) return "qwen3-coder";
  return undefined;
}

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
    const parameters = fn.parameters === undefined ? {} : structuredClone(fn.parameters);
    return { type: "function", function: { name: fn.name, description, parameters } };
  });
}

function parseArguments(messages: JsonObject[]): void {
  for (const m of messages) {
    if (!Array.isArray(m.tool_calls)) continue;
    for (const tc of m.tool_calls as JsonObject[]) {
      const fn = tc.function as JsonObject | undefined;
      if (fn && typeof fn.arguments === "string") {
        try {
          fn.arguments = parseJsonText(fn.arguments);
        } catch (e) {
          invalid(`Failed to parse tool call arguments as JSON: ${(e as Error).message}`, "messages[].tool_calls[].function.arguments");
        }
      }
    }
  }
}

/** Gemma 4's older templates want tool results inside the assistant turn (`tool_responses`). */
function gemma4ToolResponses(messages: JsonObject[]): JsonObject[] {
  const hasCalls = (m: JsonObject): boolean => Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
  const hasContent = (m: JsonObject): boolean =>
    (typeof m.content === "string" && m.content !== "") || (Array.isArray(m.content) && m.content.length > 0);
  const out: JsonObject[] = [];
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !hasCalls(m)) {
      out.push(m);
      i++;
      continue;
    }
    const calls = [...(m.tool_calls as JsonObject[])];
    const reasoning = typeof m.reasoning_content === "string" ? m.reasoning_content : undefined;
    const responses: JsonObject[] = [];
    i++;
    while (i < messages.length && messages[i]!.role === "tool") {
      const t = messages[i]!;
      let response: Json = null;
      if ("content" in t) {
        if (typeof t.content === "string") {
          try {
            response = parseJsonText(t.content);
          } catch {
            response = t.content;
          }
        } else response = t.content;
      }
      const call = calls[responses.length];
      let name = call && typeof (call.function as JsonObject | undefined)?.name === "string" ? ((call.function as JsonObject).name as string) : "";
      if (name === "") name = typeof t.tool_call_id === "string" ? t.tool_call_id : "";
      responses.push({ name, response });
      i++;
    }
    let content: Json = undefined;
    const next = messages[i];
    if (next && next.role === "assistant" && !hasCalls(next) && hasContent(next)) {
      content = next.content;
      i++;
    }
    const built: JsonObject = { role: "assistant", tool_calls: calls };
    if (responses.length > 0) built.tool_responses = responses;
    if (content !== undefined && content !== null) built.content = content;
    if (reasoning !== undefined) built.reasoning_content = reasoning;
    out.push(built);
  }
  return out;
}

/** DeepSeek V4 renders tool results in the order of the calls they answer. */
function deepseekV4SortToolResults(messages: JsonObject[]): JsonObject[] {
  const out = messages.map((m) => m);
  let order = new Map<string, number>();
  let i = 0;
  while (i < out.length) {
    const m = out[i]!;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      order = new Map();
      (m.tool_calls as JsonObject[]).forEach((c, idx) => {
        if (typeof c.id === "string" && c.id !== "") order.set(c.id, idx);
      });
      i++;
      continue;
    }
    if (m.role !== "user" && m.role !== "tool") {
      i++;
      continue;
    }
    const toolPositions: number[] = [];
    let end = i;
    for (; end < out.length; end++) {
      const r = out[end]!.role;
      if (r === "tool") toolPositions.push(end);
      else if (r !== "user") break;
    }
    if (toolPositions.length > 1 && order.size > 0) {
      const rank = (x: JsonObject): number => order.get(typeof x.tool_call_id === "string" ? x.tool_call_id : "") ?? 0;
      const sorted = toolPositions.map((p) => out[p]!).sort((a, b) => rank(a) - rank(b)); // stable, like std::stable_sort
      toolPositions.forEach((p, k) => (out[p] = sorted[k]!));
    }
    i = end;
  }
  return out;
}

/** Per-family message rewrites of the specialized handlers; undefined = render as prepared. */
function specializedMessages(kind: SpecializedKind | undefined, src: string, messages: JsonObject[]): JsonObject[] | undefined {
  switch (kind) {
    case "ministral-3":
      return messages.map((m) => {
        if (m.role !== "system" && m.role !== "assistant") return m;
        const blocks: Json[] = [];
        if (typeof m.reasoning_content === "string") blocks.push({ type: "thinking", thinking: m.reasoning_content });
        if (typeof m.content === "string") blocks.push({ type: "text", text: m.content });
        else if (Array.isArray(m.content)) blocks.push(...(m.content as Json[]));
        const { reasoning_content: _drop, ...rest } = m;
        return { ...rest, content: blocks };
      });
    case "gpt-oss":
      return messages.map((m) => {
        if (typeof m.reasoning_content !== "string") return m;
        const out: JsonObject = { ...m, thinking: m.reasoning_content };
        if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) delete out.content;
        return out;
      });
    case "lfm2":
    case "lfm2.5":
      return messages.map((m) => (typeof m.reasoning_content === "string" ? { ...m, thinking: m.reasoning_content } : m));
    case "deepseek-v3.2":
      return src.includes("function_calls") ? undefined : deepseekV4SortToolResults(messages);
    default:
      return undefined;
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
  const kind = detectSpecializedTemplate(src);
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
  if (kind === "gemma4" && !src.includes("{#- OpenAI Chat Completions:")) messages = gemma4ToolResponses(messages);

  const override = specializedMessages(kind, src, messages);
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
  const schema = request.json_schema;
  if (kind === "deepseek-v3.2" && !src.includes("function_calls") && typeof schema === "object" && schema !== null && !Array.isArray(schema))
    variables.response_format = schema;
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
