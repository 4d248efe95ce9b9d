/**
 * A LanguageModelV4 (the AI SDK's current language-model specification) that runs in-process on a
 * Context or Sequence through `createChatCompletion`: the model's own tool-call syntax is parsed
 * as it streams, so tool inputs arrive as deltas. Calls on one target run one at a time, in order.
 *
 * A stream is produced to its end whether or not the caller reads it, as a server's response is:
 * the AI SDK keeps the provider's stream for replay, so a caller that leaves `textStream` early
 * (`break`, no abort signal) never cancels it, and a pull-driven stream would hold the target for
 * ever (the next call on it would never start). Cancelling the stream, or the abort signal, stops
 * the generation at once; the target is given back only once the generation has ended, so the next
 * call never meets ERR_BUSY.
 */
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult, LanguageModelV4StreamPart, LanguageModelV4StreamResult, SharedV4Warning } from "@ai-sdk/provider";

import { createChatCompletion, type ChatCompletionChunk, type ChatCompletionStream, type CompletionTargetLike } from "../openai/index.js";
import { SlotPool } from "../server/slots.js";
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
function surfaced(e: unknown, signal: AbortSignal | undefined): unknown {
  return signal?.aborted ? (signal.reason ?? e) : e;
}

/** The plan's warnings (a tool schema degraded to permissive JSON, ...) as the AI SDK's. */
function planWarnings(warnings: readonly string[] | undefined): SharedV4Warning[] {
  return (warnings ?? []).map((message) => ({ type: "other", message }));
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
      // Non-streaming resolves once the generation has ended: the target is free when this releases it.
      const c = await createChatCompletion(this.#target, { ...request, stream: false }).catch((e: unknown) => {
        throw surfaced(e, options.abortSignal);
      });
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
        warnings: [...warnings, ...planWarnings(c.llamapeg.warnings)],
      };
    } finally {
      lease.release();
    }
  }

  /**
   * Waits for the target and the first chunk (so a refused request rejects here, as an HTTP
   * provider's does on its response status), then streams the rest as it is generated.
   */
  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const { request, warnings } = mapCallOptions(options, this.modelId);
    const signal = options.abortSignal;
    // Our own stop (the stream cancelled) beside the caller's signal.
    const stop = new AbortController();
    const lease = await queueFor(this.#target).acquire(signal);
    let iterator: AsyncIterator<ChatCompletionChunk>;
    let chunks: ChatCompletionStream;
    let first: IteratorResult<ChatCompletionChunk>;
    try {
      chunks = createChatCompletion(this.#target, { ...request, stream: true, signal: signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]) });
      iterator = chunks[Symbol.asyncIterator]();
      first = await iterator.next();
    } catch (e) {
      // The iterator's own end (run()'s finally) has waited for the generation: the target is free.
      lease.release();
      throw surfaced(e, signal);
    }
    const mapper = new StreamPartMapper();
    let cancelled = false;
    let controller!: ReadableStreamDefaultController<LanguageModelV4StreamPart>;
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      start(c) {
        controller = c;
      },
      cancel() {
        cancelled = true;
        stop.abort(new Error("the stream was cancelled"));
      },
    });
    const emit = (part: LanguageModelV4StreamPart): void => {
      if (!cancelled) controller.enqueue(part);
    };
    const startWarnings = first.done ? [] : planWarnings((first.value.llamapeg as { warnings?: string[] } | undefined)?.warnings);
    emit({ type: "stream-start", warnings: [...warnings, ...startWarnings] });

    const pump = async (): Promise<void> => {
      try {
        let step = first;
        let metadata = false;
        for (; !step.done; step = await iterator.next()) {
          const chunk = step.value;
          if (!metadata) {
            emit({ type: "response-metadata", id: chunk.id, timestamp: new Date(chunk.created * 1000), modelId: chunk.model });
            metadata = true;
          }
          if (options.includeRawChunks === true) emit({ type: "raw", rawValue: chunk });
          for (const part of mapper.push(chunk)) emit(part);
        }
        for (const part of mapper.finish(await chunks.completion)) emit(part);
        if (!cancelled) controller.close();
      } catch (e) {
        if (!cancelled) controller.error(surfaced(e, signal));
      } finally {
        // Only here has the generation ended (the iterator returned or threw after waiting for it).
        lease.release();
      }
    };
    void pump();
    return { stream, request: { body: { ...request, signal: undefined } } };
  }
}
