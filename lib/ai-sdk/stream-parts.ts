/**
 * Chat completion chunks as AI SDK stream parts, straight from the session's deltas: text and
 * reasoning blocks (one open at a time, a new id when the kind changes), and each tool call as
 * tool-input-start (its call id and name), tool-input-delta (argument fragments as generated),
 * tool-input-end, then tool-call with the final arguments.
 */
import type { LanguageModelV4FinishReason, LanguageModelV4StreamPart, LanguageModelV4Usage } from "@ai-sdk/provider";

import type { ChatCompletion, ChatCompletionChunk, FinishReason } from "../openai/index.js";

export function finishReason(reason: FinishReason): LanguageModelV4FinishReason {
  return { unified: reason === "tool_calls" ? "tool-calls" : reason, raw: reason };
}

export function usageOf(c: ChatCompletion): LanguageModelV4Usage {
  const cached = c.usage.prompt_tokens_details?.cached_tokens ?? 0;
  // Known when the target counted the reasoning block's tokens (every local target does).
  const reasoning = c.usage.completion_tokens_details?.reasoning_tokens;
  return {
    inputTokens: { total: c.usage.prompt_tokens, noCache: c.usage.prompt_tokens - cached, cacheRead: cached, cacheWrite: undefined },
    outputTokens: { total: c.usage.completion_tokens, text: reasoning === undefined ? undefined : c.usage.completion_tokens - reasoning, reasoning },
    raw: { ...c.usage },
  };
}

/**
 * What the final message adds beyond OpenAI's fields: parse errors, warnings, timings, and with
 * `providerOptions.llamapeg: {logprobs: true, top_logprobs}` the tokens' log probabilities (OpenAI's
 * `logprobs.content` entries, as @ai-sdk/openai puts them in `providerMetadata.openai.logprobs`).
 */
export function providerMetadata(c: ChatCompletion): { llamapeg: { parseErrors: unknown[]; warnings: string[]; timings: Record<string, number>; logprobs?: unknown[] } } {
  const logprobs = c.choices[0].logprobs?.content;
  return { llamapeg: { parseErrors: c.llamapeg.parse_errors, warnings: c.llamapeg.warnings, timings: { ...c.llamapeg.timings }, ...(logprobs !== undefined ? { logprobs } : {}) } };
}

interface OpenCall {
  id: string;
  name: string;
  ended: boolean;
}

export class StreamPartMapper {
  #block: { kind: "text" | "reasoning"; id: string } | null = null;
  #blocks = 0;
  readonly #calls = new Map<number, OpenCall>();

  /** The parts for one chunk. */
  push(chunk: ChatCompletionChunk): LanguageModelV4StreamPart[] {
    const out: LanguageModelV4StreamPart[] = [];
    const d = chunk.choices[0]?.delta;
    if (d === undefined) return out;
    if (typeof d.reasoning_content === "string" && d.reasoning_content !== "") out.push(...this.#text("reasoning", d.reasoning_content));
    if (typeof d.content === "string" && d.content !== "") out.push(...this.#text("text", d.content));
    for (const t of d.tool_calls ?? []) {
      let call = this.#calls.get(t.index);
      if (call === undefined && t.id !== undefined && t.function?.name !== undefined) {
        out.push(...this.#closeBlock());
        // A new call header: the earlier calls are complete.
        for (const c of this.#calls.values()) out.push(...this.#endInput(c));
        call = { id: t.id, name: t.function.name, ended: false };
        this.#calls.set(t.index, call);
        out.push({ type: "tool-input-start", id: call.id, toolName: call.name });
      }
      if (call !== undefined && t.function?.arguments) out.push({ type: "tool-input-delta", id: call.id, delta: t.function.arguments });
    }
    return out;
  }

  /** The closing parts: open blocks end, every call's input ends, then the calls with their final arguments. */
  finish(c: ChatCompletion): LanguageModelV4StreamPart[] {
    const out = this.#closeBlock();
    for (const call of this.#calls.values()) out.push(...this.#endInput(call));
    const message = c.choices[0].message;
    for (const [index, call] of (message.tool_calls ?? []).entries()) {
      const streamed = this.#calls.get(index);
      if (streamed === undefined) {
        // A call the deltas never announced (cannot happen with a well-behaved session; kept whole).
        out.push({ type: "tool-input-start", id: call.id, toolName: call.function.name }, { type: "tool-input-delta", id: call.id, delta: call.function.arguments }, { type: "tool-input-end", id: call.id });
      }
      out.push({ type: "tool-call", toolCallId: call.id, toolName: call.function.name, input: call.function.arguments });
    }
    out.push({ type: "finish", finishReason: finishReason(c.choices[0].finish_reason), usage: usageOf(c), providerMetadata: providerMetadata(c) as never });
    return out;
  }

  #text(kind: "text" | "reasoning", delta: string): LanguageModelV4StreamPart[] {
    const out: LanguageModelV4StreamPart[] = [];
    if (this.#block?.kind !== kind) {
      out.push(...this.#closeBlock());
      this.#block = { kind, id: `${kind}-${this.#blocks++}` };
      out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id: this.#block.id });
    }
    out.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id: this.#block!.id, delta });
    return out;
  }

  #closeBlock(): LanguageModelV4StreamPart[] {
    const b = this.#block;
    if (b === null) return [];
    this.#block = null;
    return [{ type: b.kind === "text" ? "text-end" : "reasoning-end", id: b.id }];
  }

  #endInput(call: OpenCall): LanguageModelV4StreamPart[] {
    if (call.ended) return [];
    call.ended = true;
    return [{ type: "tool-input-end", id: call.id }];
  }
}
