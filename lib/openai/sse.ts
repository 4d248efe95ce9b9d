/** Server-sent events in the shape OpenAI's streaming endpoint uses. */
import { toOpenAIError } from "./errors.js";
import type { ChatCompletionChunk } from "./types.js";

/** One SSE event: `data: <json>\n\n`. */
export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";

export interface SseSink {
  write(text: string): unknown;
}

/**
 * Writes every chunk as an SSE event, then `data: [DONE]`. An error during the stream (an abort,
 * a native failure) is written as an OpenAI error event instead of [DONE], then rethrown.
 */
export async function writeSSE(chunks: AsyncIterable<ChatCompletionChunk>, sink: SseSink): Promise<void> {
  try {
    for await (const c of chunks) sink.write(sseData(c));
  } catch (e) {
    sink.write(sseData(toOpenAIError(e)));
    throw e;
  }
  sink.write(SSE_DONE);
}
