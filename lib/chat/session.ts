/**
 * A streaming parse of one model response: feed pieces as the model produces them, get the message
 * so far and the OpenAI deltas since the last piece.
 *
 * Each `feed` re-parses the accumulated output as partial input, maps it, and diffs it against the
 * previous message (llama.cpp's server does the same). On top of the diff, the session:
 * - gives every tool call an id (the model's when it wrote one first, else a generated one) and keeps
 *   it for that index for the rest of the stream;
 * - sends each call's header (id, type, name, empty arguments) once, before any of its argument
 *   fragments;
 * - never throws for bad output: when the output stops matching the format, or a frame cannot be
 *   expressed as a delta, it reports a `parse_error` event with the byte position. After a parse
 *   failure the rest of the output is streamed as content, so no text is lost.
 */
import { randomBytes } from "node:crypto";
import { LlamapegError, type LlamapegErrorCode } from "../errors.js";
import { type MessageChange, compareViews, diffChange, diffMessages, extensionProblem, toolCallDelta } from "./diff.js";
import { ChatInput } from "./input.js";
import { cloneAssistantMessage, emptyAssistantMessage, type AssistantMessage, type ChatDelta, type ToolCallDelta } from "./messages.js";
import { hasFormatMapper, runChatParser } from "./parse.js";
import type { ChatInputParser, ChatPlan } from "./plan.js";
import { ContentStream, type StreamFrame, StreamMapper } from "./stream-mapper.js";
import { closeCutCalls, describeCutCall } from "./cut-calls.js";
import { GREW, SAME, completeUtf8Prefix } from "./text-fields.js";

export interface ChatParseErrorEvent {
  type: "parse_error";
  /** ERR_CHAT_PARSE: the output stopped matching the format; ERR_CHAT_DIFF: a frame could not be streamed. */
  code: LlamapegErrorCode;
  /** Byte offset in the model output (generation prompt excluded) where the problem was found. */
  position: number;
  /** The token that wrote the byte at `position` (from the ids given to `feed`), or null. */
  token: number | null;
  message: string;
}

export type ChatEvent = ChatParseErrorEvent;

export interface ChatFinishOptions {
  /** The output was cut (max_tokens, a stop string), not ended by the model: a missing required call is no error. */
  truncated?: boolean;
}

export interface ChatFrame {
  /** The message so far (after `finish`, the final message). Do not modify it. */
  message: AssistantMessage;
  /** What changed since the previous frame, in OpenAI `delta` shape, in sending order. */
  deltas: ChatDelta[];
  events: ChatEvent[];
}

export interface ChatSessionOptions {
  /** Makes the id of a call the model did not give one (default: "call_" + 24 random characters). */
  generateToolCallId?: (index: number) => string;
}

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

function randomToolCallId(): string {
  const bytes = randomBytes(24);
  let s = "call_";
  for (const b of bytes) s += ID_ALPHABET[b % ID_ALPHABET.length];
  return s;
}

/**
 * Why `next` cannot be streamed after `prev` (null when it can). Stricter than `diffMessages`, which
 * lets a field shrink to a prefix: a client that already got the longer text would keep it.
 */
function notAnExtension(prev: AssistantMessage, next: AssistantMessage): string | null {
  return extensionProblem(prev, next);
}

function isEmpty(m: AssistantMessage): boolean {
  return m.content === "" && m.reasoning_content === "" && m.tool_calls.length === 0;
}

const decoder = new TextDecoder("utf-8");
const encoder = new TextEncoder();

/** Partial parses while streaming: stray invalid UTF-8 reads as U+FFFD (see `lossyUtf8`). */
const STREAM_PARSE = { partial: true, lossyUtf8: true } as const;

export class ChatSession {
  readonly plan: ChatPlan;
  /** Generation prompt followed by the model's output, with the per-byte token map. */
  readonly input: ChatInput;
  private readonly promptLength: number;
  private readonly generateId: (index: number) => string;
  /** Reuses the previous frame's parse work (the arena's stream parser), when the arena has one. */
  private readonly streamParser: ChatInputParser | null;
  /** Maps each streamed frame from where the previous one left off (plans the generic mapper reads). */
  private readonly streamMapper: StreamMapper | ContentStream | null;
  /** Input bytes the stream parser holds (it is given only the bytes after them). */
  private streamParsed = 0;
  private readonly ids: string[] = [];
  private readonly headerSent: boolean[] = [];
  private message: AssistantMessage = emptyAssistantMessage();
  /** Input bytes whose text is in `message` (the rest is not attributed yet). */
  private consumed = 0;
  /** Set once the output stopped matching: from this byte on, everything is content. */
  private fallbackFrom = -1;
  private fallbackDecoded = 0;
  private finished = false;
  private truncated = false;

  constructor(plan: ChatPlan, options: ChatSessionOptions = {}) {
    this.plan = plan;
    this.input = new ChatInput(plan.generationPrompt);
    this.promptLength = this.input.length;
    this.consumed = this.promptLength;
    this.generateId = options.generateToolCallId ?? randomToolCallId;
    this.streamParser = typeof plan.parser?.streamParser === "function" ? plan.parser.streamParser() : null;
    this.streamMapper =
      plan.parser === null
        ? new ContentStream(encoder.encode(plan.generationPrompt).length)
        : this.streamParser !== null && !hasFormatMapper(plan.format)
          ? new StreamMapper()
          : null;
  }

  /** The message so far. */
  get current(): AssistantMessage {
    return this.message;
  }

  /**
   * Adds a piece of output (bytes may split UTF-8 characters) and returns the message so far and the
   * deltas since the last call. `token` is recorded in the input's token map. Never throws for bad
   * output; only for misuse (feeding after `finish`).
   */
  feed(piece: Uint8Array | string, token?: number | null): ChatFrame {
    if (this.finished) throw new LlamapegError("ERR_INVALID_ARGUMENT", "ChatSession.feed() called after finish()");
    this.input.append(piece, token);
    return this.step(true);
  }

  /**
   * Ends the stream: parses the finished output (as the reference does: what the format recognized
   * up to the end is the message, so a reasoning block or a call cut by max_tokens ends as it
   * stands) and returns the final message with the last deltas. An optional last piece is fed first.
   */
  finish(piece?: Uint8Array | string, token?: number | null, options: ChatFinishOptions = {}): ChatFrame {
    if (this.finished) throw new LlamapegError("ERR_INVALID_ARGUMENT", "ChatSession.finish() called twice");
    if (piece !== undefined) this.input.append(piece, token);
    this.finished = true;
    this.truncated = options.truncated === true;
    return this.step(false);
  }

  private step(partial: boolean): ChatFrame {
    const events: ChatEvent[] = [];
    let next: AssistantMessage;
    let consumed: number;
    let change: MessageChange | null = null;
    if (this.fallbackFrom >= 0) {
      ({ next, consumed, change } = this.fallbackMessage(partial));
    } else {
      let outcome: ReturnType<typeof runChatParser> | null = null;
      let frame: StreamFrame | null = null;
      try {
        if (partial && this.streamMapper !== null) ({ outcome, frame } = this.streamStep());
        // finish() parses the finished output as the reference does (leniently; see parse.ts)
        else outcome = runChatParser(this.plan, this.input.bytes, partial, partial ? this.streamParser : null, this.truncated);
      } catch (e) {
        // A parser bug or an exhausted stack must not break the stream either.
        this.startFallback(events, "ERR_CHAT_PARSE", this.consumed, `parser error: ${(e as Error).message}`);
      }
      if (outcome !== null && outcome.result !== null && outcome.result.type === "fail") {
        this.startFallback(events, "ERR_CHAT_PARSE", outcome.result.end, `the output does not match the ${this.plan.format} format`);
      } else if (outcome !== null && outcome.failure !== null) {
        this.startFallback(events, "ERR_CHAT_PARSE", outcome.failure.position, outcome.failure.reason);
      }
      if (outcome === null || this.fallbackFrom >= 0) {
        ({ next, consumed, change } = this.fallbackMessage(partial));
      } else {
        next = outcome.message;
        consumed = outcome.consumed;
        // the mapper compared this frame with its previous one: usable when that is the one sent
        if (frame !== null && frame.previous !== null && frame.previous.message === this.message) change = compareViews(frame.previous.view, frame.view);
      }
    }
    return this.emit(next, consumed, partial, events, change);
  }

  /** A partial frame through the stream parser and the stream mapper (work proportional to what changed). */
  private streamStep(): { outcome: ReturnType<typeof runChatParser>; frame: StreamFrame | null } {
    const bytes = this.input.bytes;
    const sm = this.streamMapper!;
    if (sm instanceof ContentStream) {
      const frame = sm.map(bytes, true);
      return { outcome: { message: frame.message, result: null, consumed: frame.consumed, failure: null }, frame };
    }
    const sp = this.streamParser!;
    const result = sp.extend !== undefined ? sp.extend(bytes.subarray(this.streamParsed), STREAM_PARSE) : sp.parse(bytes, STREAM_PARSE);
    this.streamParsed = bytes.length;
    // a failed parse ends the parsed part of the stream (step() falls back to content)
    if (result.type === "fail") return { outcome: { message: emptyAssistantMessage(), result, consumed: 0, failure: null }, frame: null };
    const frame = sm.map(result.ast, bytes, true);
    return { outcome: { message: frame.message, result, consumed: frame.consumed, failure: null }, frame };
  }

  private startFallback(events: ChatEvent[], code: LlamapegErrorCode, pos: number, message: string): void {
    const position = Math.max(0, pos - this.promptLength);
    events.push({ type: "parse_error", code, position, token: this.tokenAt(position), message: `${message} (byte ${position}); the rest is streamed as content` });
    this.fallbackFrom = this.consumed;
    this.fallbackDecoded = this.consumed;
  }

  /** The last good message with every byte after what it covered appended as content. */
  private fallbackMessage(partial: boolean): { next: AssistantMessage; consumed: number; change: MessageChange } {
    const bytes = this.input.bytes;
    const end = partial ? completeUtf8Prefix(bytes, bytes.length) : bytes.length;
    const next = cloneAssistantMessage(this.message);
    // Only the new bytes are decoded: the cost per piece does not grow with the output.
    let added = "";
    if (end > this.fallbackDecoded) {
      added = decoder.decode(bytes.subarray(this.fallbackDecoded, end));
      next.content += added;
      this.fallbackDecoded = end;
    }
    const same = { status: SAME, delta: "" } as const;
    const change: MessageChange = {
      reasoning: same,
      content: added === "" ? same : { status: GREW, delta: added },
      args: next.tool_calls.map(() => same),
    };
    return { next, consumed: end, change };
  }

  private emit(next: AssistantMessage, consumed: number, partial: boolean, events: ChatEvent[], change: MessageChange | null = null): ChatFrame {
    const closing = !partial && this.plan.referenceMode !== true;
    if (isEmpty(next) && !isEmpty(this.message)) {
      // Like the reference server: an empty parse keeps the last message.
      if (!closing) return { message: this.message, deltas: [], events };
      next = cloneAssistantMessage(this.message);
      change = null;
    }
    if (closing) {
      // A call cut inside its arguments: closed by appending (it still extends what was streamed), and reported.
      const cut = closeCutCalls(next);
      if (cut.length > 0) change = null;
      const position = Math.max(0, this.input.length - this.promptLength);
      for (const c of cut) events.push({ type: "parse_error", code: "ERR_CHAT_PARSE", position, token: null, message: describeCutCall(c, next.tool_calls[c.index]!.function.name) });
    }
    this.assignIds(next);
    const problem = change !== null ? extensionProblem(this.message, next, change) : notAnExtension(this.message, next);
    if (problem !== null) {
      if (partial) {
        // Some grammars flicker on partial input (an atomic part drops a call for a byte or two).
        // Hold the last message; a later frame or finish() extends it.
        return { message: this.message, deltas: [], events };
      }
      events.push({
        type: "parse_error",
        code: "ERR_CHAT_DIFF",
        position: Math.max(0, this.consumed - this.promptLength),
        token: this.tokenAt(Math.max(0, this.consumed - this.promptLength)),
        message: `the complete parse does not extend what was streamed (${problem}); the unparsed rest is kept as content`,
      });
      this.fallbackFrom = this.consumed;
      this.fallbackDecoded = this.consumed;
      const fb = this.fallbackMessage(false);
      return this.emit(fb.next, fb.consumed, false, events, fb.change);
    }
    const raw = change !== null ? diffChange(this.message, next, change) : diffMessages(this.message, next);
    const deltas = this.orderToolDeltas(raw, next, partial);
    this.message = next;
    // the generation prompt is never part of the answer, not even after a parse failure
    this.consumed = Math.max(this.promptLength, consumed);
    return { message: next, deltas, events };
  }

  /** The token covering output byte `position` (null past the end or where no token was given). */
  private tokenAt(position: number): number | null {
    const at = position + this.promptLength;
    return at < this.input.length && at >= this.promptLength ? this.input.tokenCovering(at) : null;
  }

  /** Ids by index: the first id seen for an index (the model's, else generated) is kept. */
  private assignIds(msg: AssistantMessage): void {
    const calls = msg.tool_calls;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      if (this.ids.length <= i) this.ids.push(call.id !== "" ? call.id : this.generateId(i));
      call.id = this.ids[i]!;
    }
  }

  /**
   * Puts each call's header (id, name, empty arguments) before its argument fragments and sends the
   * name once. A named call with no arguments yet waits for them (or for the end of the stream).
   */
  private orderToolDeltas(raw: ChatDelta[], msg: AssistantMessage, partial: boolean): ChatDelta[] {
    const out: ChatDelta[] = [];
    const calls = msg.tool_calls;
    const header = (i: number): void => {
      const call = calls[i]!;
      const d: ToolCallDelta = toolCallDelta(i, call, "");
      d.function = { ...d.function, arguments: "" };
      out.push({ tool_calls: [d] });
      this.headerSent[i] = true;
    };
    for (const d of raw) {
      const tc = d.tool_calls?.[0];
      // A new kind of delta: calls named earlier but still waiting get their header now.
      for (let i = 0; i < calls.length; i++) {
        if (this.headerSent[i] || calls[i]!.function.name === "") continue;
        if (tc === undefined || tc.index !== i || (tc.function?.arguments ?? "") !== "") header(i);
      }
      if (tc === undefined) {
        out.push(d);
        continue;
      }
      const args = tc.function?.arguments ?? "";
      if (!this.headerSent[tc.index]) {
        if (args === "" && partial) continue; // named but nothing to show yet
        if (calls[tc.index]!.function.name !== "") header(tc.index);
      }
      if (args !== "") out.push({ tool_calls: [{ index: tc.index, function: { arguments: args } }] });
    }
    if (!partial) {
      for (let i = 0; i < calls.length; i++) {
        if (!this.headerSent[i] && calls[i]!.function.name !== "") header(i);
      }
    }
    return out;
  }
}
