/**
 * The chat message model, with OpenAI field names, and its conversion from and to OpenAI JSON.
 *
 * Requests carry `function.arguments` either as a JSON string (the OpenAI wire format) or as an
 * object (what many clients and templates use); both are accepted and normalized to a string.
 * Validation errors name the offending field (`messages[3].tool_calls[0].function.name`).
 */
import { LlamapegError } from "../errors.js";
import { isObject } from "../json-syntax.js";

export type ChatRole = "system" | "developer" | "user" | "assistant" | "tool" | (string & {});

export interface ChatContentPart {
  type: "text" | "media_marker";
  text: string;
}

export interface ToolCall {
  /** Empty until the model writes one or the session generates one. */
  id: string;
  type: "function";
  function: {
    name: string;
    /** JSON text; while streaming, a prefix of valid JSON. */
    arguments: string;
  };
}

export interface ChatMessage {
  role: ChatRole;
  content: string | ChatContentPart[] | null;
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  /** For `role: "tool"`: which tool produced the result. */
  name?: string;
  /** For `role: "tool"`: which call this result answers. */
  tool_call_id?: string;
}

/** What parsing a model's output yields: every field present, empty when absent. */
export interface AssistantMessage {
  role: "assistant";
  content: string;
  reasoning_content: string;
  tool_calls: ToolCall[];
}

/** One streamed change to a tool call, as in an OpenAI `chat.completion.chunk`. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

/** One streamed change; each delta carries exactly one of its fields. */
export interface ChatDelta {
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallDelta[];
}

export function emptyAssistantMessage(): AssistantMessage {
  return { role: "assistant", content: "", reasoning_content: "", tool_calls: [] };
}

export function makeToolCall(name: string, args: string, id = ""): ToolCall {
  return { id, type: "function", function: { name, arguments: args } };
}

function invalid(where: string, message: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", `${where}: ${message}`, { where });
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)}`;
}

function optionalString(obj: Record<string, unknown>, key: string, where: string): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") invalid(`${where}.${key}`, `expected a string, got ${describe(value)}`);
  return value;
}

function parseContent(value: unknown, where: string): string | ChatContentPart[] | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) invalid(where, `expected a string, an array of parts or null, got ${describe(value)}`);
  return value.map((part, j) => {
    const at = `${where}[${j}]`;
    if (!isObject(part)) invalid(at, `expected an object, got ${describe(part)}`);
    const type = part.type;
    if (type !== "text" && type !== "media_marker") {
      invalid(`${at}.type`, `unsupported content part type ${JSON.stringify(type)} (expected "text" or "media_marker")`);
    }
    const text = part.text;
    if (typeof text !== "string") invalid(`${at}.text`, `expected a string, got ${describe(text)}`);
    return { type, text };
  });
}

function parseToolCall(value: unknown, where: string): ToolCall {
  if (!isObject(value)) invalid(where, `expected an object, got ${describe(value)}`);
  if (value.type !== "function") {
    invalid(`${where}.type`, `expected "function", got ${value.type === undefined ? "nothing" : describe(value.type)}`);
  }
  const fn = value.function;
  if (!isObject(fn)) invalid(`${where}.function`, `expected an object, got ${describe(fn)}`);
  const name = fn.name;
  if (typeof name !== "string" || name === "") {
    invalid(`${where}.function.name`, `expected a non-empty string, got ${describe(name)}`);
  }
  const args = fn.arguments;
  let argsText: string;
  if (typeof args === "string") argsText = args;
  else if (isObject(args) || Array.isArray(args)) argsText = JSON.stringify(args);
  else invalid(`${where}.function.arguments`, `expected a JSON string or an object, got ${describe(args)}`);
  return makeToolCall(name, argsText, optionalString(value, "id", where) ?? "");
}

/** Validates one OpenAI message and normalizes it (arguments always a string). */
export function parseChatMessage(value: unknown, where = "message"): ChatMessage {
  if (!isObject(value)) invalid(where, `expected an object, got ${describe(value)}`);
  const role = value.role;
  if (typeof role !== "string" || role === "") invalid(`${where}.role`, `expected a non-empty string, got ${describe(role)}`);
  const hasContent = "content" in value;
  const hasToolCalls = "tool_calls" in value && value.tool_calls !== null && value.tool_calls !== undefined;
  if (!hasContent && !hasToolCalls) invalid(where, `expected "content" or "tool_calls"`);
  const msg: ChatMessage = { role, content: parseContent(value.content, `${where}.content`) };
  if (hasToolCalls) {
    const calls = value.tool_calls;
    if (!Array.isArray(calls)) invalid(`${where}.tool_calls`, `expected an array, got ${describe(calls)}`);
    msg.tool_calls = calls.map((c, k) => parseToolCall(c, `${where}.tool_calls[${k}]`));
  }
  const reasoning = optionalString(value, "reasoning_content", where);
  if (reasoning !== undefined) msg.reasoning_content = reasoning;
  const name = optionalString(value, "name", where);
  if (name !== undefined) msg.name = name;
  const toolCallId = optionalString(value, "tool_call_id", where);
  if (toolCallId !== undefined) msg.tool_call_id = toolCallId;
  return msg;
}

/** Validates the `messages` array of an OpenAI request. */
export function parseChatMessages(value: unknown, where = "messages"): ChatMessage[] {
  if (!Array.isArray(value)) invalid(where, `expected an array, got ${describe(value)}`);
  return value.map((m, i) => parseChatMessage(m, `${where}[${i}]`));
}

/**
 * Joins text parts with newlines, without a newline next to a media marker (the reference's rule
 * for templates that only take string content).
 */
export function concatContentParts(parts: readonly ChatContentPart[]): string {
  let text = "";
  let lastWasMedia = false;
  for (const part of parts) {
    if (part.type === "text") {
      if (!lastWasMedia && text !== "") text += "\n";
      lastWasMedia = false;
    } else {
      lastWasMedia = true;
    }
    text += part.text;
  }
  return text;
}

/**
 * OpenAI JSON for a message: empty `reasoning_content`, `name`, `tool_call_id` and `tool_calls` are
 * left out; `content` is `null` when empty and the message carries tool calls, as OpenAI does.
 */
export function toOpenAIMessage(msg: ChatMessage | AssistantMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: msg.role };
  const calls = msg.tool_calls ?? [];
  const empty = msg.content === null || msg.content === "" || (Array.isArray(msg.content) && msg.content.length === 0);
  out.content = empty ? (calls.length > 0 ? null : "") : Array.isArray(msg.content)
    ? msg.content.map((p) => ({ type: p.type, text: p.text }))
    : msg.content;
  if (msg.reasoning_content) out.reasoning_content = msg.reasoning_content;
  if ("name" in msg && msg.name) out.name = msg.name;
  if ("tool_call_id" in msg && msg.tool_call_id) out.tool_call_id = msg.tool_call_id;
  if (calls.length > 0) {
    out.tool_calls = calls.map((c) => {
      const tc: Record<string, unknown> = { type: "function", function: { name: c.function.name, arguments: c.function.arguments } };
      if (c.id) tc.id = c.id;
      return tc;
    });
  }
  return out;
}

export function cloneAssistantMessage(msg: AssistantMessage): AssistantMessage {
  return {
    role: "assistant",
    content: msg.content,
    reasoning_content: msg.reasoning_content,
    tool_calls: msg.tool_calls.map((c) => makeToolCall(c.function.name, c.function.arguments, c.id)),
  };
}
