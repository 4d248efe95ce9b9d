/**
 * `createChatCompletion(target, request)`: an OpenAI Chat Completions call answered by a target
 * (a `Context`, a `Sequence`, or any `CompletionTarget`, see target.ts). The request is checked
 * first (ERR_INVALID_REQUEST naming the field, before anything is sampled); the plan comes from the
 * model's chat template (or `chat_template`); a local context reuses the KV prefix it holds.
 */
import { segmentByteRanges } from "../chat/prompt.js";
import type { TemplateLimits } from "../chat/template/limits.js";
import { LlamapegError } from "../errors.js";
import { CompletionAssembler, randomId, type GenerationSummary } from "./assemble.js";
import { buildCompletionPlan, type CompletionPlan } from "./plan.js";
import { normalizeChatRequest, type NormalizedChatRequest } from "./request.js";
import { RECORD_VERSION, type CompletionRecord } from "./record.js";
import { completionTarget, type CompletionTarget, type CompletionTargetLike, type TargetChatInfo, type TargetRequest } from "./target.js";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from "./types.js";

export interface CompletionOptions {
  /** Receives the generation as a replayable record (plan, token ids, pieces) when it ends. */
  onRecord?: (record: CompletionRecord) => void;
  /**
   * Parse control-token text inside message values too (the old behaviour, and llama-server's).
   * Default false: text from messages is never tokenized as control tokens.
   */
  specialTokensInMessages?: boolean;
  /** Render budgets for the chat template (steps, output size, nesting); defaults in template/limits.ts. */
  templateLimits?: TemplateLimits;
}

/** The chunks of a streamed completion; `completion` resolves to the assembled `chat.completion`. */
export interface ChatCompletionStream extends AsyncIterable<ChatCompletionChunk> {
  readonly completion: Promise<ChatCompletion>;
}

/** The template: the request's, else the model's `tool_use` variant when tools are offered, else its default. */
function templateFor(info: TargetChatInfo, r: NormalizedChatRequest): string {
  if (r.chatTemplate !== undefined) return r.chatTemplate;
  const named = r.tools.length > 0 && r.toolChoice !== "none" ? (info.toolUseTemplate ?? null) : null;
  const t = named ?? info.chatTemplate;
  if (t === null) throw new LlamapegError("ERR_INVALID_REQUEST", "chat_template: the model has no tokenizer.chat_template; pass one", { where: "chat_template" });
  return t;
}

interface Prepared {
  target: CompletionTarget;
  r: NormalizedChatRequest;
  plan: CompletionPlan;
  request: TargetRequest;
  meta: { id: string; created: number; model: string };
}

function prepareWith(target: CompletionTarget, r: NormalizedChatRequest, info: TargetChatInfo, options: CompletionOptions): Prepared {
  const plan = buildCompletionPlan(templateFor(info, r), r, { bos: info.bos, eos: info.eos }, options.templateLimits);
  const segments = options.specialTokensInMessages === true ? [] : segmentByteRanges(plan.prompt, plan.promptSegments);
  const request: TargetRequest = {
    prompt: segments.length > 0 ? { text: plan.prompt, segments } : { text: plan.prompt },
    grammar: plan.grammar,
    preservedTokens: plan.chat.preservedTokens,
    ...(r.maxTokens !== undefined ? { maxTokens: r.maxTokens } : {}),
    ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
    ...(r.topP !== undefined ? { topP: r.topP } : {}),
    ...(r.topK !== undefined ? { topK: r.topK } : {}),
    ...(r.minP !== undefined ? { minP: r.minP } : {}),
    ...(r.repeatPenalty !== undefined ? { repeatPenalty: r.repeatPenalty } : {}),
    ...(r.seed !== undefined ? { seed: r.seed >>> 0 } : {}),
    ...(r.signal !== undefined ? { signal: r.signal } : {}),
  };
  const meta = { id: randomId("chatcmpl-"), created: Math.floor(Date.now() / 1000), model: r.model ?? info.name };
  return { target, r, plan, request, meta };
}

/** Checks the request and builds the plan: at once when the target answers `chatInfo()` synchronously. */
function prepare(targetLike: CompletionTargetLike, request: ChatCompletionRequest, options: CompletionOptions): Prepared | Promise<Prepared> {
  const target = completionTarget(targetLike);
  const r = normalizeChatRequest(request);
  const info = target.chatInfo();
  return info instanceof Promise ? info.then((i) => prepareWith(target, r, i, options)) : prepareWith(target, r, info, options);
}

/** The shared loop: generation -> assembler -> chunks; the last value is the completion. */
async function* run(prepared: Prepared | Promise<Prepared>, onRecord: CompletionOptions["onRecord"]): AsyncGenerator<ChatCompletionChunk, ChatCompletion> {
  const p = await prepared;
  const assembler = new CompletionAssembler(p.plan.chat, p.meta, { stops: p.r.stop, warnings: p.plan.warnings });
  const generation = await p.target.generate(p.request);
  const tokens: number[] = [];
  const pieces: Uint8Array[] = [];
  let stoppedByString = false;
  let ended = false;
  try {
    yield* assembler.start();
    for await (const { token, piece } of generation) {
      tokens.push(token);
      pieces.push(piece);
      const { chunks, stopped } = assembler.push(token, piece);
      yield* chunks;
      if (stopped) {
        stoppedByString = true;
        generation.abort();
        break;
      }
    }
    ended = true;
  } finally {
    // A consumer that stops early (break, return) or an error ends the generation too, and the
    // target is free again before this returns.
    if (!ended) {
      generation.abort();
      await generation.result().catch(() => undefined);
    }
  }
  const { stats } = await generation.result();
  if (stats.stopReason === "abort" && !stoppedByString) {
    const reason = p.r.signal?.reason;
    throw new LlamapegError("ERR_ABORTED", `the completion was aborted after ${tokens.length} tokens${reason !== undefined ? `: ${String(reason instanceof Error ? reason.message : reason)}` : ""}`);
  }
  const summary: GenerationSummary = {
    stopReason: stoppedByString ? "stop" : stats.stopReason,
    promptTokens: stats.promptTokens,
    reusedTokens: stats.reusedTokens,
    generatedTokens: tokens.length,
    promptMs: stats.promptMs,
    generateMs: stats.generateMs,
    sampleMs: stats.sampleMs,
  };
  const end = assembler.finish(summary, p.r.includeUsage);
  yield* end.chunks;
  if (onRecord !== undefined) {
    onRecord({
      version: RECORD_VERSION,
      meta: p.meta,
      plan: p.plan.record(),
      stops: p.r.stop,
      warnings: p.plan.warnings,
      includeUsage: p.r.includeUsage,
      tokens,
      pieces: pieces.map((b) => Buffer.from(b).toString("base64")),
      toolCallIds: { ...assembler.toolCallIds },
      summary,
    });
  }
  return end.completion;
}

export function createChatCompletion(target: CompletionTargetLike, request: ChatCompletionRequest & { stream: true }, options?: CompletionOptions): ChatCompletionStream;
export function createChatCompletion(target: CompletionTargetLike, request: ChatCompletionRequest & { stream?: false | null }, options?: CompletionOptions): Promise<ChatCompletion>;
export function createChatCompletion(target: CompletionTargetLike, request: ChatCompletionRequest, options?: CompletionOptions): ChatCompletionStream | Promise<ChatCompletion>;
/**
 * `stream: false` -> a Promise of the `chat.completion`; `stream: true` -> the chunks (an async
 * iterable, consumed once). Request errors throw at once (stream) or reject (non-stream) with
 * ERR_INVALID_REQUEST; `toOpenAIError()` gives OpenAI's error body. An abort ends the stream
 * (after the chunks so far) with ERR_ABORTED.
 */
export function createChatCompletion(target: CompletionTargetLike, request: ChatCompletionRequest, options: CompletionOptions = {}): ChatCompletionStream | Promise<ChatCompletion> {
  if (request === null || typeof request !== "object" || request.stream !== true) {
    return (async () => {
      const gen = run(prepare(target, request, options), options.onRecord);
      for (;;) {
        const step = await gen.next();
        if (step.done) return step.value;
      }
    })();
  }
  const prepared = prepare(target, request, options);
  // An async target's failure surfaces on the first next(); it must not be an unhandled rejection.
  if (prepared instanceof Promise) prepared.catch(() => {});
  let settle!: { resolve: (c: ChatCompletion) => void; reject: (e: unknown) => void };
  const done = new Promise<ChatCompletion>((resolve, reject) => (settle = { resolve, reject }));
  done.catch(() => {}); // the iterator reports the error; the promise must not be an unhandled rejection
  let started = false;
  return {
    completion: done,
    [Symbol.asyncIterator]() {
      if (started) throw new LlamapegError("ERR_INVALID_ARGUMENT", "a completion stream can be iterated once");
      started = true;
      const gen = run(prepared, options.onRecord);
      return {
        async next(): Promise<IteratorResult<ChatCompletionChunk>> {
          try {
            const step = await gen.next();
            if (step.done) {
              settle.resolve(step.value);
              return { done: true, value: undefined };
            }
            return step;
          } catch (e) {
            settle.reject(e);
            throw e;
          }
        },
        async return(): Promise<IteratorResult<ChatCompletionChunk>> {
          await gen.return(undefined as never);
          settle.reject(new LlamapegError("ERR_ABORTED", "the stream was closed before the end"));
          return { done: true, value: undefined };
        },
      };
    },
  };
}
