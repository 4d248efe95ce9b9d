/**
 * `createChatCompletion(context, request)`: an OpenAI Chat Completions call answered in-process.
 * The request is checked first (ERR_INVALID_REQUEST naming the field, before anything is sampled);
 * the plan comes from the model's chat template (or `chat_template`); the context reuses the KV
 * prefix it holds from the previous turn.
 */
import { basename } from "node:path";

import type { GrammarTrigger } from "../chat/plan.js";
import { tokenizeChatPrompt } from "../chat/prompt.js";
import type { TemplateLimits } from "../chat/template/limits.js";
import { LlamapegError } from "../errors.js";
import type { Context, GenerateOptions, Model } from "../llama/index.js";
import { CompletionAssembler, randomId, type GenerationSummary } from "./assemble.js";
import { buildCompletionPlan, type CompletionPlan, type SamplingGrammar } from "./plan.js";
import { normalizeChatRequest, type NormalizedChatRequest } from "./request.js";
import { RECORD_VERSION, type CompletionRecord } from "./record.js";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from "./types.js";

export interface CompletionOptions {
  /** Receives the generation as a replayable record (plan, token ids, pieces) when it ends. */
  onRecord?: (record: CompletionRecord) => void;
  /**
   * Parse special-token text in message text too, so a user's `<|im_start|>` becomes the control
   * token (llama-server's behaviour; this library's before 0.2). Default false: only template
   * text is tokenized with special tokens. See docs/security.md.
   */
  specialTokensInMessages?: boolean;
  /** Budgets for rendering the chat template (docs/security.md). Default: DEFAULT_TEMPLATE_LIMITS. */
  templateLimits?: TemplateLimits;
}

/** The chunks of a streamed completion; `completion` resolves to the assembled `chat.completion`. */
export interface ChatCompletionStream extends AsyncIterable<ChatCompletionChunk> {
  readonly completion: Promise<ChatCompletion>;
}

const decoder = new TextDecoder();

function specialText(model: Model, id: number | null): string {
  return id === null ? "" : decoder.decode(model.tokenPiece(id, { special: true }));
}

/** The template: the request's, else the model's `tool_use` variant when tools are offered, else its default. */
function templateFor(model: Model, r: NormalizedChatRequest): string {
  if (r.chatTemplate !== undefined) return r.chatTemplate;
  const named = r.tools.length > 0 && r.toolChoice !== "none" ? model.chatTemplate("tool_use") : null;
  const t = named ?? model.chatTemplate();
  if (t === null) throw new LlamapegError("ERR_INVALID_REQUEST", "chat_template: the model has no tokenizer.chat_template; pass one", { where: "chat_template" });
  return t;
}

function isSingleToken(model: Model, text: string): boolean {
  return model.tokenize(text, { addSpecial: false, parseSpecial: true }).length === 1;
}

/** llama.cpp's trigger kinds on the native options: `pattern_full` anchored, `token` by id. */
function grammarOptions(model: Model, g: SamplingGrammar): NonNullable<GenerateOptions["grammar"]> {
  if (!g.lazy) return { gbnf: g.gbnf };
  const words: string[] = [];
  const patterns: string[] = [];
  const tokens: number[] = [];
  for (const t of g.triggers as GrammarTrigger[]) {
    switch (t.type) {
      case "word":
        words.push(t.value);
        break;
      case "pattern":
        patterns.push(t.value);
        break;
      case "pattern_full":
        patterns.push(`${t.value.startsWith("^") ? "" : "^"}${t.value}${t.value.endsWith("$") ? "" : "$"}`);
        break;
      case "token": {
        const ids = t.token !== undefined ? [t.token] : model.tokenize(t.value, { addSpecial: false, parseSpecial: true });
        if (ids.length === 1) tokens.push(ids[0]!);
        else words.push(t.value);
        break;
      }
    }
  }
  return { gbnf: g.gbnf, lazy: true, triggerWords: words, triggerPatterns: patterns, triggerTokens: tokens };
}

interface Prepared {
  r: NormalizedChatRequest;
  plan: CompletionPlan;
  prompt: number[];
  options: GenerateOptions;
  meta: { id: string; created: number; model: string };
}

function prepare(context: Context, request: ChatCompletionRequest, completion: CompletionOptions): Prepared {
  const model = context.model;
  const r = normalizeChatRequest(request);
  const plan = buildCompletionPlan(templateFor(model, r), r, { bos: specialText(model, model.bos), eos: specialText(model, model.eos) }, completion.templateLimits);
  const prompt = Array.from(
    tokenizeChatPrompt(model, plan.prompt, plan.promptSegments, { specialTokensInMessages: completion.specialTokensInMessages === true }),
  );
  const options: GenerateOptions = {
    ...(r.maxTokens !== undefined ? { maxTokens: r.maxTokens } : {}),
    ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
    ...(r.topP !== undefined ? { topP: r.topP } : {}),
    ...(r.seed !== undefined ? { seed: r.seed >>> 0 } : {}),
    ...(r.signal !== undefined ? { signal: r.signal } : {}),
    ...(plan.grammar !== null ? { grammar: grammarOptions(model, plan.grammar) } : {}),
    // The native sampler keeps only single tokens whole; llama.cpp skips the others too.
    preservedTokens: plan.chat.preservedTokens.filter((t) => isSingleToken(model, t)),
  };
  const meta = { id: randomId("chatcmpl-"), created: Math.floor(Date.now() / 1000), model: r.model ?? basename(model.path) };
  return { r, plan, prompt, options, meta };
}

/** The shared loop: generation -> assembler -> chunks; the last value is the completion. */
async function* run(context: Context, p: Prepared, onRecord: CompletionOptions["onRecord"]): AsyncGenerator<ChatCompletionChunk, ChatCompletion> {
  const assembler = new CompletionAssembler(p.plan.chat, p.meta, { stops: p.r.stop, warnings: p.plan.warnings });
  const generation = context.generate(p.prompt, p.options);
  const tokens: number[] = [];
  const pieces: Uint8Array[] = [];
  let stoppedByString = false;
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
  } finally {
    // A consumer that stops early (break, return) or an error ends the generation too, and the
    // context is free again before this returns.
    if (!generation.done) {
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

export function createChatCompletion(context: Context, request: ChatCompletionRequest & { stream: true }, options?: CompletionOptions): ChatCompletionStream;
export function createChatCompletion(context: Context, request: ChatCompletionRequest & { stream?: false | null }, options?: CompletionOptions): Promise<ChatCompletion>;
export function createChatCompletion(context: Context, request: ChatCompletionRequest, options?: CompletionOptions): ChatCompletionStream | Promise<ChatCompletion>;
/**
 * `stream: false` -> a Promise of the `chat.completion`; `stream: true` -> the chunks (an async
 * iterable, consumed once). Request errors throw at once (stream) or reject (non-stream) with
 * ERR_INVALID_REQUEST; `toOpenAIError()` gives OpenAI's error body. An abort ends the stream
 * (after the chunks so far) with ERR_ABORTED.
 */
export function createChatCompletion(context: Context, request: ChatCompletionRequest, options: CompletionOptions = {}): ChatCompletionStream | Promise<ChatCompletion> {
  if (request === null || typeof request !== "object" || request.stream !== true) {
    return (async () => {
      const gen = run(context, prepare(context, request, options), options.onRecord);
      for (;;) {
        const step = await gen.next();
        if (step.done) return step.value;
      }
    })();
  }
  const prepared = prepare(context, request, options);
  let settle!: { resolve: (c: ChatCompletion) => void; reject: (e: unknown) => void };
  const done = new Promise<ChatCompletion>((resolve, reject) => (settle = { resolve, reject }));
  done.catch(() => {}); // the iterator reports the error; the promise must not be an unhandled rejection
  let started = false;
  return {
    completion: done,
    [Symbol.asyncIterator]() {
      if (started) throw new LlamapegError("ERR_INVALID_ARGUMENT", "a completion stream can be iterated once");
      started = true;
      const gen = run(context, prepared, options.onRecord);
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
