/**
 * Model pieces in, OpenAI chunks and the final completion out. Pure: the live path (completion.ts)
 * and the offline replay (replayCompletion, record.ts) run the same code on the same pieces, so a
 * replay gives the same objects bit for bit.
 */
import { ChatSession } from "../chat/session.js";
import type { GenerationStats } from "../llama/generation.js";
import type { ChatPlan } from "../chat/plan.js";
import type { ChatFrame } from "../chat/session.js";
import { randomBytes } from "node:crypto";
import { chunk, completion, deltaChunks, eventChunk, usageChunk, type CompletionMeta } from "./shape.js";
import { StopMatcher } from "./stops.js";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionUsage, FinishReason, LlamapegCompletionInfo } from "./types.js";

export interface AssemblerOptions {
  stops: readonly string[];
  warnings: readonly string[];
  /** Ids for calls the model gave none (replay passes the recorded ones). */
  toolCallIds?: Readonly<Record<number, string>>;
}

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

export function randomId(prefix: string, length = 24): string {
  let s = prefix;
  for (const b of randomBytes(length)) s += ID_ALPHABET[b % ID_ALPHABET.length];
  return s;
}

export class CompletionAssembler {
  readonly meta: CompletionMeta;
  readonly session: ChatSession;
  readonly stops: StopMatcher;
  /** The ids generated for calls, by index (recorded for replay). */
  readonly toolCallIds: Record<number, string> = {};
  readonly parseErrors: LlamapegCompletionInfo["parse_errors"] = [];
  private readonly warnings: readonly string[];

  constructor(plan: ChatPlan, meta: CompletionMeta, options: AssemblerOptions) {
    this.meta = meta;
    this.warnings = options.warnings;
    this.stops = new StopMatcher([...options.stops, ...plan.additionalStops]);
    const given = options.toolCallIds;
    this.session = new ChatSession(plan, {
      generateToolCallId: (i) => (this.toolCallIds[i] = given?.[i] ?? randomId("call_")),
    });
  }

  /** The first chunk: the role (and the request's warnings, if any). */
  start(): ChatCompletionChunk[] {
    const first = chunk(this.meta, { role: "assistant", content: "" });
    return this.warnings.length > 0 ? [{ ...first, llamapeg: { warnings: [...this.warnings] } }] : [first];
  }

  /** Adds one generated piece; `stopped` once a stop string ended the output. */
  push(token: number, piece: Uint8Array): { chunks: ChatCompletionChunk[]; stopped: boolean } {
    const chunks: ChatCompletionChunk[] = [];
    for (const p of this.stops.push(piece, token)) chunks.push(...this.frameChunks(this.session.feed(p.bytes, p.token)));
    return { chunks, stopped: this.stops.matched !== null };
  }

  /** Ends the output: the last deltas, the finish chunk, the optional usage chunk, and the completion. */
  finish(summary: GenerationStats, includeUsage: boolean): { chunks: ChatCompletionChunk[]; completion: ChatCompletion } {
    const chunks: ChatCompletionChunk[] = [];
    for (const p of this.stops.flush()) chunks.push(...this.frameChunks(this.session.feed(p.bytes, p.token)));
    const final = this.session.finish(undefined, undefined, { truncated: summary.stopReason !== "eog" || this.stops.matched !== null });
    chunks.push(...this.frameChunks(final));
    const message = final.message;
    const reason: FinishReason =
      (summary.stopReason === "length" || summary.stopReason === "context_full") && this.stops.matched === null ? "length" : message.tool_calls.length > 0 ? "tool_calls" : "stop";
    chunks.push(chunk(this.meta, {}, reason));
    const usage: ChatCompletionUsage = {
      prompt_tokens: summary.promptTokens,
      completion_tokens: summary.generatedTokens,
      total_tokens: summary.promptTokens + summary.generatedTokens,
      prompt_tokens_details: { cached_tokens: summary.reusedTokens },
      // counted by the target (the reasoning budget's counter), not from the parse: see completion.ts
      ...(summary.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: summary.reasoningTokens } } : {}),
    };
    if (includeUsage) chunks.push(usageChunk(this.meta, usage));
    const perSecond = (n: number, ms: number): number => (ms > 0 ? (n / ms) * 1000 : 0);
    const info: LlamapegCompletionInfo = {
      warnings: [...this.warnings],
      parse_errors: this.parseErrors.map((e) => ({ ...e })),
      timings: {
        prompt_ms: summary.promptMs,
        generation_ms: summary.generateMs,
        sampling_ms: summary.sampleMs,
        prompt_per_second: perSecond(summary.promptTokens - summary.reusedTokens, summary.promptMs),
        generation_per_second: perSecond(summary.generatedTokens, summary.generateMs),
      },
      ...(summary.forcedTokens !== undefined || summary.draftTokens !== undefined
        ? { decoding: { forced_tokens: summary.forcedTokens ?? 0, draft_tokens: summary.draftTokens ?? 0, draft_accepted_tokens: summary.draftAcceptedTokens ?? 0 } }
        : {}),
    };
    return { chunks, completion: completion(this.meta, message, reason, usage, info) };
  }

  private frameChunks(frame: ChatFrame): ChatCompletionChunk[] {
    const out: ChatCompletionChunk[] = [];
    for (const e of frame.events) {
      this.parseErrors.push({ code: e.code, position: e.position, message: e.message });
      out.push(eventChunk(this.meta, e));
    }
    out.push(...deltaChunks(this.meta, frame.deltas));
    return out;
  }
}
