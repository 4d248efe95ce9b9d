/**
 * The answer of an endpoint that maps Chat Completions chunks to its own events (Messages,
 * Responses): the whole body at once, or named SSE events with backpressure; once the headers are
 * out an error becomes the API's own error event.
 */
import type { ServerResponse } from "node:http";

import type { ChatCompletionChunk } from "../openai/index.js";
import { sendJson } from "./respond.js";
import { SseWriter } from "./sse-writer.js";

/** Maps chunks to an API's events (MessageEmitter, ResponseEmitter). */
export interface ChunkEmitter<E extends { type: string }> {
  start(): E[];
  push(chunk: ChatCompletionChunk): E[];
}

export interface NamedEventsAnswer<E extends { type: string }> {
  stream: boolean;
  /** The first step of `chunks`, already taken (what the target refuses is still an HTTP error). */
  first: IteratorResult<ChatCompletionChunk>;
  chunks: AsyncIterator<ChatCompletionChunk>;
  emitter: ChunkEmitter<E>;
  /** After the last chunk: the whole body (non-streamed) and the last events (streamed). */
  finish(): Promise<{ body: unknown; events: E[] }>;
  /** The API's error event (its data) for an error after the headers. */
  errorEvent(error: unknown): unknown;
}

/** Sends the answer; resolves with the status (200: the headers went out). */
export async function sendNamedEvents<E extends { type: string }>(res: ServerResponse, a: NamedEventsAnswer<E>): Promise<number> {
  let step = a.first;
  if (!a.stream) {
    for (; !step.done; step = await a.chunks.next()) a.emitter.push(step.value);
    sendJson(res, 200, (await a.finish()).body);
    return 200;
  }
  const sse = new SseWriter(res);
  sse.start();
  try {
    for (const e of a.emitter.start()) await sse.named(e.type, e);
    for (; !step.done; step = await a.chunks.next()) {
      for (const e of a.emitter.push(step.value)) {
        if (!(await sse.named(e.type, e))) {
          await a.chunks.return?.();
          return 200;
        }
      }
    }
    for (const e of (await a.finish()).events) await sse.named(e.type, e);
    sse.end();
  } catch (e) {
    if (!sse.closed) {
      await sse.named("error", a.errorEvent(e));
      sse.end();
    }
  }
  return 200;
}
