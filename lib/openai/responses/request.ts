/**
 * An OpenAI Responses request as the Chat Completions request it means: `input` items (messages,
 * reasoning, function calls and their outputs) become chat messages, `instructions` the system
 * message, function tools and `tool_choice` the chat forms, `text.format` the response_format,
 * `reasoning.effort` the thinking switch and reasoning budget. The plan, session and sampling are then Chat
 * Completions' own (lib/openai/completion.ts). Every field is in RESPONSES_FIELDS: honoured,
 * ignored by design, or a 400 naming it.
 */
import type { ChatCompletionRequest } from "../types.js";
import { invalidRequest } from "../errors.js";
import { isObject } from "../../json-syntax.js";
import { checkFields, honoured, ignored, SAMPLING_EXTENSIONS, unsupported, type FieldRule } from "../field-contract.js";
import type { ResponseFunctionTool, ResponseTextFormat, ResponseToolChoice } from "./types.js";

export const RESPONSES_FIELDS: Readonly<Record<string, FieldRule>> = {
  input: honoured,
  instructions: honoured,
  model: honoured,
  tools: honoured,
  tool_choice: honoured,
  parallel_tool_calls: honoured,
  max_output_tokens: honoured,
  temperature: honoured,
  top_p: honoured,
  stream: honoured,
  text: honoured,
  reasoning: honoured,
  previous_response_id: honoured,
  /** Default true: kept in the server's bounded in-memory store for previous_response_id. */
  store: honoured,
  metadata: honoured,
  user: ignored("an end-user id for abuse monitoring"),
  safety_identifier: ignored("an end-user id for abuse monitoring"),
  service_tier: ignored("there is one tier: this process"),
  prompt_cache_key: ignored("the KV prefix is reused automatically"),
  prompt_cache_retention: ignored("the KV prefix is reused automatically"),
  stream_options: ignored("obfuscation pads events against network side channels; a local server sends none"),
  truncation: unsupported("the input is never truncated: a prompt over the context is a 400", (v) => v === "disabled"),
  include: unsupported("there is no extra output to include (reasoning text is always in the reasoning item)", (v) => Array.isArray(v) && v.length === 0),
  background: unsupported("responses run while the request is open", (v) => v === false),
  conversation: unsupported("conversations are not stored; use previous_response_id"),
  prompt: unsupported("there are no stored prompt templates"),
  max_tool_calls: unsupported("the number of calls is bounded by parallel_tool_calls"),
  top_logprobs: unsupported("log probabilities are served by /v1/chat/completions", (v) => v === 0),
  // llama.cpp and llamapeg extensions, as in Chat Completions
  ...Object.fromEntries(SAMPLING_EXTENSIONS.map((k) => [k, honoured])),
};

type ChatMessage = Record<string, unknown> & { role: string };

/** The text of a content list (`input_text` / `output_text` parts), or a string as is. */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return invalidRequest(where, "expected a string or an array of content parts");
  return content
    .map((part: unknown, j) => {
      if (!isObject(part)) invalidRequest(`${where}[${j}]`, "expected a content part object");
      if ((part.type === "input_text" || part.type === "output_text" || part.type === "reasoning_text" || part.type === "summary_text") && typeof part.text === "string") return part.text;
      if (part.type === "refusal" && typeof part.refusal === "string") return part.refusal;
      return invalidRequest(`${where}[${j}].type`, `only text parts are supported (input_text, output_text), got ${JSON.stringify(part.type)}: this model reads text only`);
    })
    .join("");
}

/** `input` as chat messages: consecutive assistant output (reasoning, text, calls) is one assistant message. */
export function inputMessages(input: unknown): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) return invalidRequest("input", "expected a string or an array of input items");
  const out: ChatMessage[] = [];
  /** The assistant message later output items of the same turn join. */
  const assistant = (): ChatMessage => {
    const last = out[out.length - 1];
    if (last !== undefined && last.role === "assistant") return last;
    const m: ChatMessage = { role: "assistant", content: "" };
    out.push(m);
    return m;
  };
  input.forEach((item: unknown, i) => {
    const where = `input[${i}]`;
    if (!isObject(item)) invalidRequest(where, "expected an input item object");
    const type = item.type ?? "message";
    switch (type) {
      case "message": {
        const role = item.role;
        if (role !== "user" && role !== "system" && role !== "developer" && role !== "assistant") invalidRequest(`${where}.role`, `expected "user", "assistant", "system" or "developer", got ${JSON.stringify(role)}`);
        const text = textOf(item.content, `${where}.content`);
        if (role === "assistant") {
          const m = assistant();
          // Text after calls of the same turn is a new message.
          if (Array.isArray(m.tool_calls)) out.push({ role: "assistant", content: text });
          else m.content = `${m.content as string}${text}`;
        } else out.push({ role: role === "developer" ? "system" : role, content: text });
        return;
      }
      case "reasoning": {
        const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : item.summary;
        const text = parts === undefined || parts === null ? "" : textOf(parts, `${where}.content`);
        const m = assistant();
        m.reasoning_content = `${(m.reasoning_content as string | undefined) ?? ""}${text}`;
        return;
      }
      case "function_call": {
        if (typeof item.call_id !== "string" || item.call_id === "") invalidRequest(`${where}.call_id`, "expected a string");
        if (typeof item.name !== "string" || item.name === "") invalidRequest(`${where}.name`, "expected a string");
        if (typeof item.arguments !== "string") invalidRequest(`${where}.arguments`, "expected the arguments as a JSON string");
        const m = assistant();
        const calls = (m.tool_calls as unknown[] | undefined) ?? (m.tool_calls = []);
        (calls as unknown[]).push({ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } });
        return;
      }
      case "function_call_output": {
        if (typeof item.call_id !== "string" || item.call_id === "") invalidRequest(`${where}.call_id`, "expected a string");
        out.push({ role: "tool", tool_call_id: item.call_id, content: textOf(item.output, `${where}.output`) });
        return;
      }
      default:
        invalidRequest(`${where}.type`, `only message, reasoning, function_call and function_call_output items are supported, got ${JSON.stringify(type)}`);
    }
  });
  return out;
}

function chatTools(tools: unknown): { chat: unknown[]; echo: ResponseFunctionTool[] } {
  if (tools === undefined || tools === null) return { chat: [], echo: [] };
  if (!Array.isArray(tools)) return invalidRequest("tools", "expected an array of tools");
  const echo = tools.map((t: unknown, i): ResponseFunctionTool => {
    if (!isObject(t)) invalidRequest(`tools[${i}]`, "expected a tool object");
    if (t.type !== "function") invalidRequest(`tools[${i}].type`, `only function tools are supported (there are no hosted tools here), got ${JSON.stringify(t.type)}`);
    if (typeof t.name !== "string" || t.name === "") invalidRequest(`tools[${i}].name`, "expected a non-empty string");
    if (t.parameters !== undefined && t.parameters !== null && !isObject(t.parameters)) invalidRequest(`tools[${i}].parameters`, "expected a JSON Schema object");
    const description = typeof t.description === "string" ? t.description : null;
    return { type: "function", name: t.name, description, parameters: (t.parameters as Record<string, unknown> | undefined) ?? null, strict: typeof t.strict === "boolean" ? t.strict : null };
  });
  const chat = echo.map((t) => ({
    type: "function",
    function: { name: t.name, ...(t.description !== null && t.description !== undefined ? { description: t.description } : {}), parameters: t.parameters ?? { type: "object" }, ...(t.strict !== null ? { strict: t.strict } : {}) },
  }));
  return { chat, echo };
}

function chatToolChoice(choice: unknown): { chat: unknown; echo: ResponseToolChoice } | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return { chat: choice, echo: choice };
  if (isObject(choice) && choice.type === "function" && typeof choice.name === "string") return { chat: { type: "function", function: { name: choice.name } }, echo: { type: "function", name: choice.name } };
  if (isObject(choice) && choice.type === "allowed_tools" && Array.isArray(choice.tools)) {
    const tools = choice.tools.map((t: unknown, i) => {
      if (!isObject(t) || t.type !== "function" || typeof t.name !== "string") invalidRequest(`tool_choice.tools[${i}]`, 'expected {type: "function", name}');
      return { type: "function", function: { name: t.name } };
    });
    return { chat: { type: "allowed_tools", allowed_tools: { mode: choice.mode, tools } }, echo: choice.mode === "required" ? "required" : "auto" };
  }
  return invalidRequest("tool_choice", `expected "auto", "none", "required", {type: "function", name} or {type: "allowed_tools", mode, tools}, got ${JSON.stringify(choice)}`);
}

function responseFormat(text: unknown): { chat: unknown; echo: ResponseTextFormat } {
  if (text === undefined || text === null) return { chat: undefined, echo: { format: { type: "text" } } };
  if (!isObject(text)) return invalidRequest("text", "expected {format}");
  for (const k of Object.keys(text)) {
    if (k === "verbosity" && (text.verbosity === null || text.verbosity === undefined)) continue;
    if (k !== "format") invalidRequest(`text.${k}`, k === "verbosity" ? "not supported: output verbosity is not something a local model can be asked for" : "unknown field");
  }
  const f = text.format;
  if (f === undefined || f === null) return { chat: undefined, echo: { format: { type: "text" } } };
  if (!isObject(f)) return invalidRequest("text.format", "expected {type}");
  if (f.type === "text") return { chat: undefined, echo: { format: { type: "text" } } };
  if (f.type === "json_object") return { chat: { type: "json_object" }, echo: { format: { type: "json_object" } } };
  if (f.type === "json_schema") {
    if (!isObject(f.schema)) invalidRequest("text.format.schema", "expected a JSON Schema object");
    const name = typeof f.name === "string" ? f.name : "response";
    const strict = typeof f.strict === "boolean" ? f.strict : null;
    const json_schema = { name, schema: f.schema, ...(typeof f.description === "string" ? { description: f.description } : {}), ...(strict !== null ? { strict } : {}) };
    return { chat: { type: "json_schema", json_schema }, echo: { format: { type: "json_schema", ...json_schema, strict } } };
  }
  return invalidRequest("text.format.type", `expected "text", "json_object" or "json_schema", got ${JSON.stringify(f.type)}`);
}

type Effort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

function reasoningEffort(reasoning: unknown): Effort | null {
  if (reasoning === undefined || reasoning === null) return null;
  if (!isObject(reasoning)) return invalidRequest("reasoning", "expected {effort, summary}");
  for (const k of Object.keys(reasoning)) {
    // A summary needs a summarizer; the reasoning item carries the model's own text instead.
    if (k !== "effort" && k !== "summary" && k !== "generate_summary") invalidRequest(`reasoning.${k}`, "unknown field");
  }
  const e = reasoning.effort;
  if (e === undefined || e === null) return null;
  if (e === "none" || e === "minimal" || e === "low" || e === "medium" || e === "high" || e === "xhigh") return e;
  return invalidRequest("reasoning.effort", `expected "none", "minimal", "low", "medium", "high" or "xhigh", got ${JSON.stringify(e)}`);
}

/** What the response object echoes of its request. */
export interface ResponsesEcho {
  instructions: string | null;
  metadata: Record<string, string> | null;
  tools: ResponseFunctionTool[];
  toolChoice: ResponseToolChoice;
  text: ResponseTextFormat;
  parallelToolCalls: boolean;
  temperature: number | null;
  topP: number | null;
  maxOutputTokens: number | null;
  effort: Effort | null;
  previousResponseId: string | null;
  store: boolean;
  stream: boolean;
}

export interface MappedResponsesRequest {
  /** The Chat Completions request (stream: true; the route shapes events or the whole response). */
  chat: ChatCompletionRequest;
  /** This turn's input as chat messages (history and instructions excluded), for the store. */
  turn: ChatMessage[];
  echo: ResponsesEcho;
}

/**
 * Checks a Responses request and maps it. `history` is the conversation up to the previous
 * response (from the store, when previous_response_id names one); instructions are this request's
 * alone, as OpenAI reads them.
 */
export function mapResponsesRequest(raw: Record<string, unknown>, history: readonly ChatMessage[] = []): MappedResponsesRequest {
  checkFields(RESPONSES_FIELDS, raw, "OpenAI Responses");
  if (raw.input === undefined || raw.input === null) invalidRequest("input", "required");
  const turn = inputMessages(raw.input);
  if (raw.instructions !== undefined && raw.instructions !== null && typeof raw.instructions !== "string") invalidRequest("instructions", "expected a string");
  const instructions = (raw.instructions as string | null | undefined) ?? null;
  if (raw.metadata !== undefined && raw.metadata !== null && !isObject(raw.metadata)) invalidRequest("metadata", "expected an object of strings");
  if (raw.store !== undefined && raw.store !== null && typeof raw.store !== "boolean") invalidRequest("store", "expected a boolean");
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== "boolean") invalidRequest("stream", "expected a boolean");
  if (raw.parallel_tool_calls !== undefined && raw.parallel_tool_calls !== null && typeof raw.parallel_tool_calls !== "boolean") invalidRequest("parallel_tool_calls", "expected a boolean");
  const tools = chatTools(raw.tools);
  const choice = chatToolChoice(raw.tool_choice);
  const format = responseFormat(raw.text);
  const effort = reasoningEffort(raw.reasoning);
  const chat: Record<string, unknown> = {
    messages: [...(instructions !== null ? [{ role: "system", content: instructions }] : []), ...history, ...turn],
    stream: true,
  };
  if (typeof raw.model === "string") chat.model = raw.model;
  if (tools.chat.length > 0) chat.tools = tools.chat;
  if (choice !== undefined) chat.tool_choice = choice.chat;
  if (typeof raw.parallel_tool_calls === "boolean") chat.parallel_tool_calls = raw.parallel_tool_calls;
  if (format.chat !== undefined) chat.response_format = format.chat;
  if (effort !== null) chat.reasoning_effort = effort;
  if (raw.max_output_tokens !== undefined && raw.max_output_tokens !== null) chat.max_tokens = raw.max_output_tokens;
  for (const k of ["temperature", "top_p", ...SAMPLING_EXTENSIONS] as const) if (raw[k] !== undefined && raw[k] !== null) chat[k] = raw[k];
  return {
    chat: chat as unknown as ChatCompletionRequest,
    turn,
    echo: {
      instructions,
      metadata: (raw.metadata as Record<string, string> | undefined) ?? null,
      tools: tools.echo,
      toolChoice: choice?.echo ?? "auto",
      text: format.echo,
      parallelToolCalls: raw.parallel_tool_calls === true,
      temperature: typeof raw.temperature === "number" ? raw.temperature : null,
      topP: typeof raw.top_p === "number" ? raw.top_p : null,
      maxOutputTokens: typeof raw.max_output_tokens === "number" ? raw.max_output_tokens : null,
      effort,
      previousResponseId: typeof raw.previous_response_id === "string" ? raw.previous_response_id : null,
      store: raw.store !== false,
      stream: raw.stream === true,
    },
  };
}

/** Chat Completions field names as this API's (for errors the shared chat layer raises). */
export const RESPONSES_PARAM_NAMES: Readonly<Record<string, string>> = {
  messages: "input",
  max_tokens: "max_output_tokens",
  response_format: "text.format",
  reasoning_effort: "reasoning.effort",
};
