/** OpenAI objects from the chat layer's messages and deltas. */
import type { AssistantMessage, ChatDelta } from "../chat/messages.js";
import type { ChatEvent } from "../chat/session.js";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessage, ChatCompletionUsage, ChunkDelta, FinishReason, LlamapegCompletionInfo } from "./types.js";

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

export const SYSTEM_FINGERPRINT = "llamapeg";

/** OpenAI's message: `content` null when the message is only tool calls; empty fields left out. */
export function completionMessage(m: AssistantMessage): ChatCompletionMessage {
  const out: ChatCompletionMessage = { role: "assistant", content: m.content === "" && m.tool_calls.length > 0 ? null : m.content, refusal: null };
  if (m.reasoning_content !== "") out.reasoning_content = m.reasoning_content;
  if (m.tool_calls.length > 0) {
    out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.function.name, arguments: c.function.arguments } }));
  }
  return out;
}

export function completion(meta: CompletionMeta, m: AssistantMessage, finish: FinishReason, usage: ChatCompletionUsage, info: LlamapegCompletionInfo): ChatCompletion {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, message: completionMessage(m), finish_reason: finish, logprobs: null }],
    usage,
    llamapeg: info,
  };
}

export function chunk(meta: CompletionMeta, delta: ChunkDelta, finish: FinishReason | null = null): ChatCompletionChunk {
  return {
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  };
}

/** One chunk per delta (each delta carries one field; tool-call headers come before their arguments). */
export function deltaChunks(meta: CompletionMeta, deltas: readonly ChatDelta[]): ChatCompletionChunk[] {
  return deltas.map((d) => {
    const delta: ChunkDelta = {};
    if (d.content !== undefined) delta.content = d.content;
    if (d.reasoning_content !== undefined) delta.reasoning_content = d.reasoning_content;
    if (d.tool_calls !== undefined) {
      delta.tool_calls = d.tool_calls.map((t) => {
        const out: NonNullable<ChunkDelta["tool_calls"]>[number] = { index: t.index };
        if (t.id !== undefined) out.id = t.id;
        if (t.type !== undefined) out.type = t.type;
        if (t.function !== undefined) out.function = { ...t.function };
        return out;
      });
    }
    return chunk(meta, delta);
  });
}

/** A chat event as a chunk with an empty delta and a typed `llamapeg.event`. */
export function eventChunk(meta: CompletionMeta, e: ChatEvent): ChatCompletionChunk {
  return { ...chunk(meta, {}), llamapeg: { event: { type: e.type, code: e.code, position: e.position, message: e.message } } };
}

/** The usage chunk of `stream_options.include_usage`: no choices. */
export function usageChunk(meta: CompletionMeta, usage: ChatCompletionUsage): ChatCompletionChunk {
  return { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, system_fingerprint: SYSTEM_FINGERPRINT, choices: [], usage };
}
