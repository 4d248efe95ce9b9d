/**
 * Streaming deltas as a pure function of two snapshots of the parsed message.
 *
 * Same rules as llama.cpp's `common_chat_msg_diff::compute_diffs`: text fields only grow (a shrink
 * to a prefix, e.g. a partial stop word erased at the end, yields nothing); the number of tool
 * calls only grows; only the last already-seen call can still change, and only by growing its
 * arguments or by gaining/extending its id or name. Anything else is an `ERR_CHAT_DIFF` error,
 * which the session reports as a `parse_error` event instead of breaking the stream.
 *
 * Cost: each text field is compared once (a native prefix check), and only the last previous call
 * and the new calls are looked at, never a re-serialization of all calls.
 */
import { LlamapegError } from "../errors.js";
import type { AssistantMessage, ChatDelta, ToolCall, ToolCallDelta } from "./messages.js";
import { CHANGED, type FieldChange, type FieldView, GREW, SAME, SHRANK, compareFields } from "./text-fields.js";

function growth(prev: string, next: string, field: string): string {
  if (prev === "") return next;
  if (next.length >= prev.length && next.startsWith(prev)) return next.slice(prev.length);
  // The reference tolerates a shrink to a prefix: the previous frame ended on a partial stop
  // word that the current one erased. Nothing to send.
  if (prev.startsWith(next)) return "";
  throw notAPrefix(prev, next, field);
}

function notAPrefix(prev: string, next: string, field: string): LlamapegError {
  return new LlamapegError(
    "ERR_CHAT_DIFF",
    `${field} changed in a way a stream cannot express: ${JSON.stringify(clip(prev))} is not a prefix of ${JSON.stringify(clip(next))}`,
    { where: field },
  );
}

function clip(s: string): string {
  return s.length <= 80 ? s : `…${s.slice(-80)}`;
}

/** The delta that announces a whole call (its id, name and arguments so far). */
export function toolCallDelta(index: number, call: ToolCall, args: string = call.function.arguments): ToolCallDelta {
  const d: ToolCallDelta = { index };
  if (call.id !== "") {
    d.id = call.id;
    d.type = "function";
  }
  const fn: { name?: string; arguments?: string } = {};
  if (call.function.name !== "") fn.name = call.function.name;
  if (args !== "") fn.arguments = args;
  if (fn.name !== undefined || fn.arguments !== undefined) d.function = fn;
  return d;
}

/**
 * The deltas that turn `prev` into `next`, in order: reasoning, content, then tool calls by index.
 * Each delta carries one field. Throws `LlamapegError` with code `ERR_CHAT_DIFF` when `next` does
 * not extend `prev`.
 */
export function diffMessages(prev: AssistantMessage, next: AssistantMessage): ChatDelta[] {
  const deltas: ChatDelta[] = [];
  if (prev.reasoning_content !== next.reasoning_content) {
    const d = growth(prev.reasoning_content, next.reasoning_content, "reasoning_content");
    if (d !== "") deltas.push({ reasoning_content: d });
  }
  if (prev.content !== next.content) {
    const d = growth(prev.content, next.content, "content");
    if (d !== "") deltas.push({ content: d });
  }
  diffToolCalls(prev, next, deltas, (p, n, where) => growth(p.function.arguments, n.function.arguments, where));
  return deltas;
}

/** The tool-call part of a diff; `argsGrowth` gives the arguments delta of the last previous call. */
function diffToolCalls(prev: AssistantMessage, next: AssistantMessage, deltas: ChatDelta[], argsGrowth: (p: ToolCall, n: ToolCall, where: string) => string): void {
  const prevCalls = prev.tool_calls;
  const nextCalls = next.tool_calls;
  if (nextCalls.length < prevCalls.length) {
    throw new LlamapegError(
      "ERR_CHAT_DIFF",
      `tool calls went from ${prevCalls.length} to ${nextCalls.length}; a stream can only add calls`,
      { where: "tool_calls" },
    );
  }
  if (prevCalls.length > 0) {
    const idx = prevCalls.length - 1;
    const p = prevCalls[idx]!;
    const n = nextCalls[idx]!;
    const where = `tool_calls[${idx}]`;
    const pn = p.function.name;
    const nn = n.function.name;
    if (pn !== nn && pn !== "" && nn !== "" && !nn.startsWith(pn)) {
      throw new LlamapegError("ERR_CHAT_DIFF", `${where}.function.name changed from ${JSON.stringify(pn)} to ${JSON.stringify(nn)}`, {
        where: `${where}.function.name`,
      });
    }
    const args = argsGrowth(p, n, `${where}.function.arguments`);
    const headerChanged = p.id !== n.id || pn !== nn;
    if (args !== "" || headerChanged) {
      const d: ToolCallDelta = headerChanged ? toolCallDelta(idx, n, args) : { index: idx, function: { arguments: args } };
      deltas.push({ tool_calls: [d] });
    }
  }
  for (let idx = prevCalls.length; idx < nextCalls.length; idx++) {
    deltas.push({ tool_calls: [toolCallDelta(idx, nextCalls[idx]!)] });
  }
}

/** A message's fields as the streaming mapper built them (see text-fields.ts): what `diffViews` compares. */
export interface MessageView {
  readonly reasoning: FieldView;
  readonly content: FieldView;
  readonly calls: readonly { readonly name: string; readonly args: FieldView }[];
}

/** How each field of a streamed message relates to the same field in the previous frame. */
export interface MessageChange {
  readonly reasoning: FieldChange;
  readonly content: FieldChange;
  /** arguments of the calls both frames have, by index */
  readonly args: readonly FieldChange[];
}

/**
 * Compares two frames' views field by field. Its cost follows what changed (segment lists), not the
 * length of the message; `diffChange` and `changeProblem` then give what `diffMessages` and the
 * session's extension check give on the messages' texts.
 */
export function compareViews(prev: MessageView, next: MessageView): MessageChange {
  const n = Math.min(prev.calls.length, next.calls.length);
  const args: FieldChange[] = new Array<FieldChange>(n);
  for (let i = 0; i < n; i++) args[i] = compareFields(prev.calls[i]!.args, next.calls[i]!.args);
  return { reasoning: compareFields(prev.reasoning, next.reasoning), content: compareFields(prev.content, next.content), args };
}

function changeGrowth(c: FieldChange, prev: string, next: string, field: string): string {
  if (c.status === GREW) return c.delta;
  if (c.status === CHANGED) throw notAPrefix(prev, next, field);
  return "";
}

/** `diffMessages(prev, next)` for two frames whose fields `change` compares (same deltas, same errors). */
export function diffChange(prev: AssistantMessage, next: AssistantMessage, change: MessageChange): ChatDelta[] {
  const deltas: ChatDelta[] = [];
  const r = changeGrowth(change.reasoning, prev.reasoning_content, next.reasoning_content, "reasoning_content");
  if (r !== "") deltas.push({ reasoning_content: r });
  const c = changeGrowth(change.content, prev.content, next.content, "content");
  if (c !== "") deltas.push({ content: c });
  diffToolCalls(prev, next, deltas, (p, n, where) => changeGrowth(change.args[prev.tool_calls.length - 1]!, p.function.arguments, n.function.arguments, where));
  return deltas;
}

/**
 * Why `next` cannot be streamed after `prev` (null when it can): every text only grows, no call is
 * lost, earlier calls stay as they were and the last one only grows its arguments. Stricter than
 * `diffMessages`, which lets a field shrink to a prefix (a client that got the longer text keeps it).
 */
export function extensionProblem(prev: AssistantMessage, next: AssistantMessage, change?: MessageChange): string | null {
  const grows = (c: FieldChange | undefined, p: string, n: string): boolean => (c === undefined ? n.startsWith(p) : c.status === SAME || c.status === GREW);
  if (!grows(change?.reasoning, prev.reasoning_content, next.reasoning_content)) return "reasoning_content changed";
  if (!grows(change?.content, prev.content, next.content)) return "content changed";
  const pc = prev.tool_calls;
  const nc = next.tool_calls;
  if (nc.length < pc.length) return "fewer tool calls";
  for (let i = 0; i < pc.length; i++) {
    const p = pc[i]!.function;
    const n = nc[i]!.function;
    const a = change?.args[i];
    // Earlier calls must be unchanged; the last one may only grow.
    const argsOk = i < pc.length - 1 ? (a === undefined ? p.arguments === n.arguments : a.status === SAME) : grows(a, p.arguments, n.arguments);
    if (!argsOk || p.name !== n.name) return `tool call ${i} changed`;
  }
  return null;
}

export { SAME, GREW, SHRANK, CHANGED };

/**
 * Replays deltas onto a message (the client's view of a stream). Used by tests and by callers that
 * want to check the streaming invariant; `msg` is modified and returned.
 */
export function applyDeltas(msg: AssistantMessage, deltas: readonly ChatDelta[]): AssistantMessage {
  for (const d of deltas) {
    if (d.reasoning_content !== undefined) msg.reasoning_content += d.reasoning_content;
    if (d.content !== undefined) msg.content += d.content;
    for (const tc of d.tool_calls ?? []) {
      while (msg.tool_calls.length <= tc.index) {
        msg.tool_calls.push({ id: "", type: "function", function: { name: "", arguments: "" } });
      }
      const call = msg.tool_calls[tc.index]!;
      if (tc.id !== undefined) call.id = tc.id;
      if (tc.function?.name !== undefined) call.function.name = tc.function.name;
      if (tc.function?.arguments !== undefined) call.function.arguments += tc.function.arguments;
    }
  }
  return msg;
}
