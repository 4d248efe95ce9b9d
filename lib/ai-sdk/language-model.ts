/**
 * A LanguageModelV4 (the AI SDK's current language-model specification) that runs in-process on a
 * Context or Sequence through `createChatCompletion`: the model's own tool-call format is parsed
 * as it streams, so tool inputs arrive as deltas. Calls on one target run one at a time, in order.
 */
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult, LanguageModelV4StreamPart, LanguageModelV4StreamResult } from "@ai-sdk/provider";

import { createChatCompletion, type ChatCompletionChunk, type ChatCompletionStream, type CompletionTargetLike } from "../openai/index.js";
import { SlotPool, type Lease } from "../server/slots.js";
import { mapCallOptions } from "./call-options.js";
import { finishReason, providerMetadata, StreamPartMapper, usageOf } from "./stream-parts.js";

/** One queue per target: a Context runs one generation at a time. */
const queues = new WeakMap<object, SlotPool<CompletionTargetLike>>();

function queueFor(target: CompletionTargetLike): SlotPool<CompletionTargetLike> {
  let q = queues.get(target);
  if (q === undefined) queues.set(target, (q = new SlotPool([target], Number.POSITIVE_INFINITY)));
  return q;
}

/** An abort surfaces as the signal's reason (the AI SDK's AbortError), not as our ERR_ABORTED. */
function rethrow(e: unknown, signal: AbortSignal | undefined): never {
  if (signal?.aborted) throw signal.reason ?? e;
  throw e;
}

export class LlamapegLanguageModel implements LanguageModelV4 {
  readonly specificationVersion = "v4";
  readonly provider = "llamapeg";
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]> = {};
  readonly #target: CompletionTargetLike;

  constructor(target: CompletionTargetLike, modelId: string) {
    this.#target = target;
    this.modelId = modelId;
  }

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const { request, warnings } = mapCallOptions(options, this.modelId);
    const lease = await queueFor(this.#target).acquire(options.abortSignal);
    try {
      const c = await createChatCompletion(this.#target, { ...request, stream: false }).catch((e: unknown) => rethrow(e, options.abortSignal));
      const m = c.choices[0].message;
      const content: LanguageModelV4Content[] = [];
      if (m.reasoning_content !== undefined && m.reasoning_content !== "") content.push({ type: "reasoning", text: m.reasoning_content });
      if (m.content !== null && m.content !== "") content.push({ type: "text", text: m.content });
      for (const call of m.tool_calls ?? []) content.push({ type: "tool-call", toolCallId: call.id, toolName: call.function.name, input: call.function.arguments });
      return {
        content,
        finishReason: finishReason(c.choices[0].finish_reason),
        usage: usageOf(c),
        providerMetadata: providerMetadata(c) as never,
        request: { body: { ...request, signal: undefined } },
        response: { id: c.id, timestamp: new Date(c.created * 1000), modelId: c.model, body: c },
        warnings,
      };
    } finally {
      lease.release();
    }
  }

  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const { request, warnings } = mapCallOptions(options, this.modelId);
    const queue = queueFor(this.#target);
    const target = this.#target;
    const signal = options.abortSignal;
    const mapper = new StreamPartMapper();
    let lease: Lease<CompletionTargetLike> | undefined;
    let chunks: ChatCompletionStream | undefined;
    let iterator: AsyncIterator<ChatCompletionChunk> | undefined;
    let first = true;
    const release = () => lease?.release();
    // Pull-driven: a consumer that reads slowly holds the generation back (its bounded window),
    // and one that cancels stops it.
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      start(controller) {
        controller.enqueue({ type: "stream-start", warnings });
      },
      async pull(controller) {
        try {
          if (iterator === undefined) {
            lease = await queue.acquire(signal);
            chunks = createChatCompletion(target, { ...request, stream: true });
            iterator = chunks[Symbol.asyncIterator]();
          }
          for (;;) {
            const step = await iterator.next();
            if (step.done) {
              for (const part of mapper.finish(await chunks!.completion)) controller.enqueue(part);
              controller.close();
              release();
              return;
            }
            const chunk = step.value;
            let parts = 0;
            if (first) {
              controller.enqueue({ type: "response-metadata", id: chunk.id, timestamp: new Date(chunk.created * 1000), modelId: chunk.model });
              first = false;
              parts++;
            }
            if (options.includeRawChunks === true) {
              controller.enqueue({ type: "raw", rawValue: chunk });
              parts++;
            }
            for (const part of mapper.push(chunk)) {
              controller.enqueue(part);
              parts++;
            }
            if (parts > 0) return;
          }
        } catch (e) {
          release();
          controller.error(signal?.aborted ? (signal.reason ?? e) : e);
        }
      },
      async cancel() {
        // Closing the chunk stream ends the generation before the target is given back.
        await iterator?.return?.();
        release();
      },
    });
    return { stream, request: { body: { ...request, signal: undefined } } };
  }
}
