/**
 * Helpers for comparing the chat layer with the reference harness: message and diff shapes of
 * `chat.parse` / `chat.diff`, normalized so both sides compare field by field.
 */
import type { AssistantMessage, ChatDelta } from "../../lib/chat/messages.js";

/** The harness's `msg` (common_chat_msg as JSON). */
export interface RefMsg {
  role: string;
  content: string;
  reasoning_content: string;
  tool_calls: { name: string; arguments: string; id: string }[];
}

/** The harness's diff entry (common_chat_msg_diff as JSON). */
export interface RefDiff {
  reasoning_content_delta: string;
  content_delta: string;
  tool_call_index: number | null;
  tool_call_delta: { name: string; arguments: string; id: string };
}

export interface NormMsg {
  content: string;
  reasoning_content: string;
  tool_calls: { name: string; id: string; arguments: unknown }[];
}

/** Arguments as parsed JSON when they are JSON (so spacing does not count), else the raw text. */
function normArgs(args: string): unknown {
  try {
    return { json: JSON.parse(args) };
  } catch {
    return { raw: args };
  }
}

/** `cutInChar`: the input ends inside a UTF-8 character; the reference shows it as U+FFFD, we leave it out. */
function normText(s: string, cutInChar: boolean): string {
  return cutInChar ? s.replace(/\uFFFD+$/, "") : s;
}

export function normRef(m: RefMsg, cutInChar = false): NormMsg {
  return {
    content: normText(m.content, cutInChar),
    reasoning_content: normText(m.reasoning_content, cutInChar),
    tool_calls: m.tool_calls.map((c) => ({ name: c.name, id: c.id, arguments: normArgs(normText(c.arguments, cutInChar)) })),
  };
}

export function normOurs(m: AssistantMessage): NormMsg {
  return {
    content: m.content,
    reasoning_content: m.reasoning_content,
    tool_calls: m.tool_calls.map((c) => ({ name: c.function.name, id: c.id, arguments: normArgs(c.function.arguments) })),
  };
}

/** Our message as the harness reads one (`chat.diff` input). */
export function toRefMsg(m: AssistantMessage): RefMsg {
  return {
    role: "assistant",
    content: m.content,
    reasoning_content: m.reasoning_content,
    tool_calls: m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments, id: c.id })),
  };
}

/** Our deltas in the reference's diff shape. */
export function toRefDiffs(deltas: readonly ChatDelta[]): RefDiff[] {
  return deltas.map((d) => {
    const tc = d.tool_calls?.[0];
    return {
      reasoning_content_delta: d.reasoning_content ?? "",
      content_delta: d.content ?? "",
      tool_call_index: tc === undefined ? null : tc.index,
      tool_call_delta: { name: tc?.function?.name ?? "", arguments: tc?.function?.arguments ?? "", id: tc?.id ?? "" },
    };
  });
}

/** The reference emits an entry when a field shrank to a prefix, with nothing in it; we emit none. */
export function dropEmptyDiffs(diffs: readonly RefDiff[]): RefDiff[] {
  return diffs.filter(
    (d) =>
      d.reasoning_content_delta !== "" ||
      d.content_delta !== "" ||
      d.tool_call_index !== null,
  );
}

export function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

/** Does `bytes[0, cut)` end inside a UTF-8 character? */
export function cutsCharacter(bytes: Uint8Array, cut: number): boolean {
  return cut < bytes.length && (bytes[cut]! & 0xc0) === 0x80;
}
