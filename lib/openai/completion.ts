/**
 * `createChatCompletion(target, request)`: an OpenAI Chat Completions call answered by a target
 * (a `Context`, a `Sequence`, or any `CompletionTarget`, see target.ts). The request is checked
 * first (ERR_INVALID_REQUEST naming the field, before anything is sampled); the plan comes from the
 * model's chat template (or `chat_template`); a local context reuses the KV prefix it holds.
 */
import { segmentByteRanges } from "../chat/prompt.js";
import type { TemplateLimits } from "../jinja/index.js";
import { LlamapegError, internalError } from "../errors.js";
import { randomBytes } from "node:crypto";

import type { GeneratedToken, GenerationStats } from "../llama/generation.js";
import { pickSampling, type SamplingKey } from "../llama/sampling-params.js";
import { CompletionAssembler, randomId } from "./assemble.js";
import { planFastForward } from "./decoding.js";
import { invalidRequest } from "./errors.js";
import { buildCompletionPlan, buildCompletionPlanWith, type ChatPlanner, type CompletionPlan } from "./plan.js";
import { normalizeChatRequest, type NormalizedChatRequest } from "./request.js";
import { RECORD_VERSION, type CompletionRecord } from "./record.js";
import { completionTarget, type CompletionTarget, type CompletionTargetLike, type TargetChatInfo, type TargetRequest } from "./target.js";
import { usageChunk } from "./shape.js";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, TokenLogprob, TopLogprob } from "./types.js";

/** One target, or one per choice for `n` > 1. */
export type CompletionTargets = CompletionTargetLike | readonly CompletionTargetLike[];

export interface CompletionOptions {
  /** Receives the generation as a replayable record (plan, token ids, pieces) when it ends. */
  onRecord?: (record: CompletionRecord) => void;
  /**
   * Parse control-token text inside message values too (the old behaviour, and llama-server's).
   * Default false: text from messages is never tokenized as control tokens.
   */
  specialTokensInMessages?: boolean;
  /** Render budgets for the chat template (steps, output size, nesting); defaults in jinja/limits.ts. */
  templateLimits?: TemplateLimits;
}

/** Not public: what the server adds (an object of this type passes as `CompletionOptions`). */
export interface PlannedCompletionOptions extends CompletionOptions {
  /**
   * Builds the chat plan somewhere else than here and now (the server's runs in a worker thread,
   * so a cold plan never blocks its event loop). Default: at once, on this thread.
   */
  planner?: ChatPlanner;
}

/** The chunks of a streamed completion; `completion` resolves to the assembled `chat.completion`. */
export interface ChatCompletionStream extends AsyncIterable<ChatCompletionChunk> {
  readonly completion: Promise<ChatCompletion>;
}

/** The template: the request's, else the model's `tool_use` variant when tools are offered, else its default. */
function templateFor(info: TargetChatInfo, r: NormalizedChatRequest): string {
  if (r.chatTemplate !== undefined) return r.chatTemplate;
  const named = (r.chat.tools?.length ?? 0) > 0 && r.chat.toolChoice !== "none" ? (info.toolUseTemplate ?? null) : null;
  const t = named ?? info.chatTemplate;
  if (t === null) throw new LlamapegError("ERR_INVALID_REQUEST", "chat_template: the model has no tokenizer.chat_template; pass one", { where: "chat_template" });
  return t;
}

/**
 * The request's sampling as a target takes it: every field it sets, carried whole (`pickSampling`);
 * the seed as uint32, log probabilities only when asked for.
 */
export function targetSampling(r: NormalizedChatRequest): Pick<TargetRequest, SamplingKey> {
  const { logprobs, topLogprobs, seed, ...sampling } = pickSampling(r);
  return { ...sampling, ...(seed !== undefined ? { seed: seed >>> 0 } : {}), ...(logprobs === true ? { logprobs: true, topLogprobs: topLogprobs ?? 0 } : {}) };
}

interface Prepared {
  /** One per choice at least (n > 1 runs choice i on targets[i]). */
  targets: CompletionTarget[];
  r: NormalizedChatRequest;
  plan: CompletionPlan;
  request: TargetRequest;
  meta: { id: string; created: number; model: string };
  /** n > 1 on a Context: takes the choices' sequences when the run starts (see choiceTargets). */
  acquire?: () => { targets: CompletionTarget[]; release: () => void };
}

function prepareWith(targets: CompletionTarget[], r: NormalizedChatRequest, info: TargetChatInfo, options: PlannedCompletionOptions): Prepared | Promise<Prepared> {
  const template = templateFor(info, r);
  const specials = { bos: info.bos, eos: info.eos };
  if (options.planner !== undefined) return buildCompletionPlanWith(options.planner, template, r, specials, options.templateLimits).then((plan) => preparedWith(targets, r, info, options, plan));
  return preparedWith(targets, r, info, options, buildCompletionPlan(template, r, specials, options.templateLimits));
}

function preparedWith(targets: CompletionTarget[], r: NormalizedChatRequest, info: TargetChatInfo, options: CompletionOptions, plan: CompletionPlan): Prepared {
  // The message ranges in both units: a local target slices the string, llama-server takes bytes.
  const textSegments = options.specialTokensInMessages === true ? [] : plan.promptSegments;
  const request: TargetRequest = {
    prompt: textSegments.length > 0 ? { text: plan.prompt, segments: segmentByteRanges(plan.prompt, textSegments), textSegments } : { text: plan.prompt },
    grammar: plan.grammar,
    preservedTokens: plan.chat.preservedTokens,
    ...targetSampling(r),
    // n > 1: each choice its own seed (the request's + index, else random), so the choices differ.
    ...(r.seed === undefined && r.n > 1 ? { seed: randomBytes(4).readUInt32LE(0) } : {}),
    ...(r.maxTokens !== undefined ? { maxTokens: r.maxTokens } : {}),
    ...(plan.reasoningBudget !== undefined ? { reasoningBudget: plan.reasoningBudget } : {}),
    ...(planFastForward(r.decoding.fastForward, plan.grammar !== null, r.chat.referenceMode) ? { fastForward: true } : {}),
    ...(r.decoding.speculative !== undefined ? { speculative: r.decoding.speculative } : {}),
    ...(r.signal !== undefined ? { signal: r.signal } : {}),
  };
  const meta = { id: randomId("chatcmpl-"), created: Math.floor(Date.now() / 1000), model: r.model ?? info.name };
  return { targets, r, plan, request, meta };
}

/** A `Context`: hands out sequences of its own (duck-typed: this layer does not import the native one). */
interface SequenceSource {
  readonly sequences: number;
  readonly sequencesInUse: number;
  getSequence(): CompletionTargetLike & { dispose(): void };
}

function isSequenceSource(t: unknown): t is SequenceSource {
  return typeof t === "object" && t !== null && typeof (t as Partial<SequenceSource>).getSequence === "function" && typeof (t as Partial<SequenceSource>).sequences === "number";
}

/** Where the choices run: the targets, or (n > 1 on a Context) how to take them when the run starts. */
interface ChoiceTargets {
  /** Answers chatInfo() for the plan. */
  info: CompletionTarget;
  targets?: CompletionTarget[];
  /** Takes n free sequences (a 400 naming n when they are gone) and how to give them back. */
  acquire?: () => { targets: CompletionTarget[]; release: () => void };
}

/**
 * The targets of the choices: the array given, or for n > 1 on a `Context`, n free sequences of it,
 * taken when the run starts and given back when it ends. Too few: a 400 naming `n` that says why.
 */
function choiceTargets(targetLike: CompletionTargets, n: number): ChoiceTargets {
  if (Array.isArray(targetLike)) {
    const targets = (targetLike as readonly CompletionTargetLike[]).map(completionTarget);
    if (targets.length === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", "createChatCompletion needs at least one completion target", { where: "target" });
    if (n > targets.length) invalidRequest("n", `n=${n} needs ${n} sequences to run on, one per choice; got ${targets.length} target${targets.length === 1 ? "" : "s"}`);
    return { info: targets[0]!, targets };
  }
  const single = targetLike as CompletionTargetLike;
  const info = completionTarget(single);
  if (n === 1) return { info, targets: [info] };
  if (!isSequenceSource(single)) invalidRequest("n", `n=${n} needs ${n} sequences to run on, one per choice; got one target (pass an array of ${n} sequences, or a Context with ${n} free sequences)`);
  const tooFew = (free: number): never => invalidRequest("n", `n=${n} needs ${n} free sequences; this context has ${single.sequences} (${free} free): create it with sequences: ${n} or more`);
  if (single.sequences - single.sequencesInUse < n) tooFew(single.sequences - single.sequencesInUse);
  const acquire = () => {
    const held: (CompletionTargetLike & { dispose(): void })[] = [];
    const release = () => {
      for (const s of held.splice(0)) s.dispose();
    };
    // Free at the check, taken since by someone else: the same 400.
    if (single.sequences - single.sequencesInUse < n) tooFew(single.sequences - single.sequencesInUse);
    try {
      for (let i = 0; i < n; i++) held.push(single.getSequence());
    } catch (e) {
      release();
      throw e;
    }
    return { targets: held.map((s) => completionTarget(s)), release };
  };
  return { info, acquire };
}

/** Checks the request and builds the plan: at once when the target answers `chatInfo()` synchronously. */
function prepare(targetLike: CompletionTargets, request: ChatCompletionRequest, options: PlannedCompletionOptions): Prepared | Promise<Prepared> {
  if (targetLike === null || typeof targetLike !== "object") completionTarget(targetLike as CompletionTargetLike); // throws, naming the target
  const r = normalizeChatRequest(request);
  const choices = choiceTargets(targetLike, r.n);
  const info = choices.info.chatInfo();
  const withAcquire = (p: Prepared): Prepared => (choices.acquire === undefined ? p : { ...p, acquire: choices.acquire });
  const done = (i: TargetChatInfo): Prepared | Promise<Prepared> => {
    const p = prepareWith(choices.targets ?? [], r, i, options);
    return p instanceof Promise ? p.then(withAcquire) : withAcquire(p);
  };
  return info instanceof Promise ? info.then(done) : done(info);
}

/** The shared loop of one choice: generation -> assembler -> chunks; the last value is the completion. */
async function* run(p: Prepared, index: number, onRecord: CompletionOptions["onRecord"], includeUsage: boolean): AsyncGenerator<ChatCompletionChunk, ChatCompletion> {
  const target = p.targets[index]!;
  const assembler = new CompletionAssembler(p.plan.chat, p.meta, { stops: p.r.stop, warnings: p.plan.warnings });
  const request = index > 0 && p.request.seed !== undefined ? { ...p.request, seed: (p.request.seed + index) >>> 0 } : p.request;
  const generation = await target.generate(request);
  const logprobs = p.r.logprobs ? new LogprobCollector(target) : null;
  const tokens: number[] = [];
  const pieces: Uint8Array[] = [];
  let stoppedByString = false;
  let ended = false;
  try {
    yield* assembler.start();
    for await (const item of generation) {
      const { token, piece } = item;
      tokens.push(token);
      pieces.push(piece);
      if (logprobs !== null) await logprobs.add(item);
      const { chunks, stopped } = assembler.push(token, piece);
      logprobs?.attach(chunks);
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
  const summary: GenerationStats = {
    stopReason: stoppedByString ? "stop" : stats.stopReason,
    promptTokens: stats.promptTokens,
    reusedTokens: stats.reusedTokens,
    generatedTokens: tokens.length,
    promptMs: stats.promptMs,
    generateMs: stats.generateMs,
    sampleMs: stats.sampleMs,
    ...reasoningCounts(p.plan, stats, tokens.length),
    // how the target decoded (absent where it does not say: llama-server)
    ...(stats.forcedTokens !== undefined ? { forcedTokens: stats.forcedTokens, forcedRuns: stats.forcedRuns ?? 0 } : {}),
    ...(stats.draftTokens !== undefined ? { draftTokens: stats.draftTokens, draftAcceptedTokens: stats.draftAcceptedTokens ?? 0 } : {}),
  };
  const end = assembler.finish(summary, includeUsage);
  if (logprobs !== null) {
    logprobs.attach(end.chunks);
    end.completion.choices[0].logprobs = { content: logprobs.all, refusal: null };
  }
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
  const completion = end.completion;
  if (index > 0) completion.choices[0].index = index;
  return completion;
}

/**
 * The reasoning counts of the usage: the target's (a stop string may end the output before tokens
 * it already counted), 0 when the plan has no reasoning markers, none when a target with markers
 * did not count (llama-server).
 */
function reasoningCounts(plan: CompletionPlan, stats: GenerationStats, kept: number): Pick<GenerationStats, "reasoningTokens" | "reasoningForcedTokens"> {
  if (stats.reasoningTokens !== undefined) return { reasoningTokens: Math.min(stats.reasoningTokens, kept), reasoningForcedTokens: stats.reasoningForcedTokens ?? 0 };
  return plan.reasoningBudget === undefined ? { reasoningTokens: 0, reasoningForcedTokens: 0 } : {};
}

/** A chunk of choice `index` (n > 1). */
function withIndex(c: ChatCompletionChunk, index: number): ChatCompletionChunk {
  return index === 0 || c.choices.length === 0 ? c : { ...c, choices: c.choices.map((x) => ({ ...x, index })) };
}

/**
 * All choices: n = 1 is the one loop; n > 1 runs the choices at once (each on its own target) and
 * interleaves their chunks as they come, then one completion with every choice and the summed usage.
 */
async function* runAll(prepared: Prepared | Promise<Prepared>, onRecord: CompletionOptions["onRecord"]): AsyncGenerator<ChatCompletionChunk, ChatCompletion> {
  const p = await prepared;
  const n = p.r.n;
  if (n === 1) return yield* run(p, 0, onRecord, p.r.includeUsage);
  if (p.acquire === undefined) return yield* runChoices(p, onRecord);
  const { targets, release } = p.acquire();
  try {
    return yield* runChoices({ ...p, targets }, onRecord);
  } finally {
    release();
  }
}

async function* runChoices(p: Prepared, onRecord: CompletionOptions["onRecord"]): AsyncGenerator<ChatCompletionChunk, ChatCompletion> {
  const n = p.r.n;
  const gens = Array.from({ length: n }, (_, i) => run(p, i, onRecord, false));
  type Step = { i: number; step?: IteratorResult<ChatCompletionChunk, ChatCompletion>; error?: unknown };
  const pull = (i: number): Promise<Step> => gens[i]!.next().then((step) => ({ i, step }), (error: unknown) => ({ i, error }));
  const pending = new Map<number, Promise<Step>>(gens.map((_, i) => [i, pull(i)]));
  const results: ChatCompletion[] = [];
  try {
    while (pending.size > 0) {
      const { i, step, error } = await Promise.race(pending.values());
      if (step === undefined) throw error;
      if (step.done) {
        results[i] = step.value;
        pending.delete(i);
        continue;
      }
      pending.set(i, pull(i));
      yield withIndex(step.value, i);
    }
  } finally {
    // An error in one choice, or a consumer that stops early, ends the others' generations too,
    // and their targets are free again before this returns (return() runs after the pending next()).
    await Promise.all([...pending.keys()].map((i) => gens[i]!.return(undefined as never).catch(() => undefined)));
  }
  const first = results[0]!;
  const completionTokens = results.reduce((sum, c) => sum + c.usage.completion_tokens, 0);
  const usage: ChatCompletion["usage"] = { ...first.usage, completion_tokens: completionTokens, total_tokens: first.usage.prompt_tokens + completionTokens };
  // Reasoning tokens are summed like the completion tokens (each choice counted them, or none did).
  if (results.every((c) => c.usage.completion_tokens_details !== undefined)) {
    usage.completion_tokens_details = { reasoning_tokens: results.reduce((sum, c) => sum + c.usage.completion_tokens_details!.reasoning_tokens, 0) };
  }
  if (p.r.includeUsage) yield usageChunk(p.meta, usage);
  const choices = results.map((c) => c.choices[0]) as ChatCompletion["choices"];
  return { ...first, choices, usage, llamapeg: { ...first.llamapeg, parse_errors: results.flatMap((c) => c.llamapeg.parse_errors) } };
}

const pieceDecoder = new TextDecoder();
/** float's lowest, as llama-server sends a zero probability (JSON has no -Infinity). */
const LOWEST = -3.4028234663852886e38;

/** The `logprobs` entries of one choice: all of them, and those not yet sent in a chunk. */
class LogprobCollector {
  readonly all: TokenLogprob[] = [];
  #unsent: TokenLogprob[] = [];
  readonly #target: CompletionTarget;
  readonly #pieces = new Map<number, Uint8Array>();

  constructor(target: CompletionTarget) {
    this.#target = target;
  }

  async add(item: GeneratedToken): Promise<void> {
    const x = item.extra;
    if (x === undefined || x.ids.length === 0) throw internalError("the target reported no log probability for a sampled token", "logprobs");
    const top: TopLogprob[] = [];
    for (let k = 1; k < x.ids.length; k++) top.push(entry(await this.#piece(x.ids[k]!), x.values[k]!));
    const e: TokenLogprob = { ...entry(item.piece, x.values[0]!), top_logprobs: top };
    this.all.push(e);
    this.#unsent.push(e);
  }

  /** The entries so far go on the last chunk of this step that has a choice (none: they wait for the next one). */
  attach(chunks: ChatCompletionChunk[]): void {
    if (this.#unsent.length === 0) return;
    for (let k = chunks.length - 1; k >= 0; k--) {
      const choice = chunks[k]!.choices[0];
      if (choice === undefined) continue;
      choice.logprobs = { content: this.#unsent, refusal: null };
      this.#unsent = [];
      return;
    }
  }

  async #piece(token: number): Promise<Uint8Array> {
    let piece = this.#pieces.get(token);
    if (piece === undefined) {
      if (this.#target.tokenPiece === undefined) throw internalError("the target cannot name the top_logprobs tokens (no tokenPiece)", "top_logprobs");
      piece = await this.#target.tokenPiece(token);
      this.#pieces.set(token, piece);
    }
    return piece;
  }
}

function entry(bytes: Uint8Array, logprob: number): TopLogprob {
  return { token: pieceDecoder.decode(bytes), logprob: Number.isFinite(logprob) ? logprob : LOWEST, bytes: Array.from(bytes) };
}

export function createChatCompletion(target: CompletionTargets, request: ChatCompletionRequest & { stream: true }, options?: CompletionOptions): ChatCompletionStream;
export function createChatCompletion(target: CompletionTargets, request: ChatCompletionRequest & { stream?: false | null }, options?: CompletionOptions): Promise<ChatCompletion>;
export function createChatCompletion(target: CompletionTargets, request: ChatCompletionRequest, options?: CompletionOptions): ChatCompletionStream | Promise<ChatCompletion>;
/**
 * `stream: false` -> a Promise of the `chat.completion`; `stream: true` -> the chunks (an async
 * iterable, consumed once). Request errors throw at once (stream) or reject (non-stream) with
 * ERR_INVALID_REQUEST; `toOpenAIError()` gives OpenAI's error body. An abort ends the stream
 * (after the chunks so far) with ERR_ABORTED. `n` > 1 needs an array of at least n targets (e.g.
 * n sequences of one context); choice i runs on the i-th, all at once.
 */
export function createChatCompletion(target: CompletionTargets, request: ChatCompletionRequest, options: CompletionOptions = {}): ChatCompletionStream | Promise<ChatCompletion> {
  if (request === null || typeof request !== "object" || request.stream !== true) {
    return (async () => {
      const gen = runAll(prepare(target, request, options), options.onRecord);
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
      const gen = runAll(prepared, options.onRecord);
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
