/**
 * Where a completion runs: the seam between the chat layer (plans, sessions, chunks) and whatever
 * turns a prompt into tokens. `createChatCompletion(target, request)` takes
 *
 * - a `CompletionTarget`: the general form (a llama-server backend implements it), or
 * - a `TokenGenerator`: anything holding a `Model` that generates from token ids — a `Context`
 *   today, a `Sequence` (`context.getSequence()`) — adapted by `completionTarget()`.
 *
 * The contract, in full:
 * 1. `chatInfo()` (sync or async) says what the plan needs from the model: its chat templates, the
 *    BOS / EOS texts templates print, and the name echoed in responses. The plan is built from it.
 * 2. `generate(request)` (sync or async) gets the plan's prompt as text, with the byte ranges that
 *    came from message values (`PromptInput.segments`: tokenize those without special-token
 *    parsing, so message text never becomes control tokens), the sampler grammar as the plan gives
 *    it (triggers by kind, token triggers by text, the prefill the grammar consumes first), the
 *    marker texts to keep whole, and the sampling
 *    options. The target tokenizes the prompt itself, maps triggers and preserved tokens to its
 *    vocabulary (single-token checks are its business), and starts generating.
 * 3. The generation is an async iterable of `{token, piece}` (piece: the token's bytes, possibly
 *    part of a UTF-8 character), with `abort()` (idempotent; a no-op once finished) and `result()`,
 *    which resolves with the stats once the generation has ended, or rejects with its error.
 *    Leaving the iteration early (break) must end the generation too.
 */
import { tokenizeChatPrompt, tokenizeChatPromptAsync, type PromptByteSegment, type PromptTextSegment } from "../chat/prompt.js";
import { LlamapegError } from "../errors.js";
import { invalidRequest } from "./errors.js";
import type { GenerateOptions, GrammarOptions } from "../llama/generate-options.js";
import { pickSampling, type SamplingOptions } from "../llama/sampling-params.js";
import { mapTriggers, modelVocabulary, singleToken } from "../llama/triggers.js";
import type { SamplingGrammar } from "../chat/plan.js";
import type { GeneratedToken, GenerationStats } from "../llama/generation.js";
import type { ReasoningBudgetOptions } from "../llama/reasoning-budget.js";
import type { SpeculativeOptions } from "../llama/speculative-options.js";
import type { Model } from "../llama/model.js";

export type { PromptByteSegment, PromptTextSegment };

/** @deprecated renamed `PromptByteSegment` (the plan's UTF-16 ranges are `PromptTextSegment`). */
export type PromptSegment = PromptByteSegment;

/**
 * A rendered prompt. Without segments, all of it is template text (special tokens parsed
 * everywhere). Each target reads the unit it tokenizes in: a local model slices the JS string
 * (`textSegments`), llama-server takes bytes (`segments`); `createChatCompletion` passes both, so
 * no target converts back.
 */
export interface PromptInput {
  text: string;
  /** Message-value ranges as UTF-8 byte ranges, sorted and disjoint: tokenized with special-token parsing off. */
  segments?: readonly PromptByteSegment[];
  /** The same ranges in UTF-16 code units of `text` (when given, a local target uses these instead of converting `segments`). */
  textSegments?: readonly PromptTextSegment[];
}

export type { SamplingGrammar };

/**
 * One generation for a target: the plan's prompt, grammar and markers, and the request's sampling
 * (`SamplingOptions`, lib/llama/sampling-params.ts, unset fields at their defaults).
 */
export interface TargetRequest extends SamplingOptions {
  prompt: PromptInput;
  /** null: sample freely. */
  grammar: SamplingGrammar | null;
  /** Marker texts the sampler keeps whole; the target keeps those that are one token for it. */
  preservedTokens: readonly string[];
  maxTokens?: number;
  /** token id -> bias added to its logit; the target refuses ids outside its vocabulary (400 naming logit_bias). */
  logitBias?: ReadonlyMap<number, number>;
  /**
   * Each item's `extra` carries (token id, log probability) pairs: the sampled token first, then the
   * `topLogprobs` most likely ones. A target that cannot report them refuses the request (400
   * naming logprobs).
   */
  logprobs?: boolean;
  /**
   * The plan's reasoning markers and the request's bound on the tokens between them (`tokens`
   * Infinity: no bound, only counted), as `generate()`'s option; the target reports the count as
   * `stats.reasoningTokens` when it can. Absent: the plan has no reasoning markers.
   */
  reasoningBudget?: ReasoningBudgetOptions;
  /** Decode text the grammar forces as a batch (generate()'s `fastForward`); a target that cannot ignores it. */
  fastForward?: boolean;
  /** Prompt-lookup drafts (generate()'s `speculative`); a target that cannot refuses (400 naming speculative). */
  speculative?: SpeculativeOptions;
  signal?: AbortSignal;
}

/** One running generation (`Generation` satisfies it). */
export interface TargetGeneration extends AsyncIterable<GeneratedToken> {
  abort(): void;
  result(): Promise<{ stats: GenerationStats }>;
}

/** What a plan needs to know about the model behind a target. */
export interface TargetChatInfo {
  /** Echoed as `model` in responses unless the request names one. */
  name: string;
  /** The default chat template (GGUF `tokenizer.chat_template`), null when there is none. */
  chatTemplate: string | null;
  /** The `tool_use` variant, used when tools are offered (null or absent: the default). */
  toolUseTemplate?: string | null;
  /** BOS / EOS token texts as templates print them ("" when the model has none). */
  bos: string;
  eos: string;
}

export interface CompletionTarget {
  chatInfo(): TargetChatInfo | Promise<TargetChatInfo>;
  generate(request: TargetRequest): TargetGeneration | Promise<TargetGeneration>;
  /** A token's bytes (control tokens as their text): names the alternatives of `top_logprobs`. */
  tokenPiece?(token: number): Uint8Array | Promise<Uint8Array>;
}

/** A local generator over token ids: `Context`, `Sequence`. */
export interface TokenGenerator {
  readonly model: Model;
  generate(prompt: ArrayLike<number>, options?: GenerateOptions): TargetGeneration;
  /** A Context's draft model (a Sequence's is its context's): `speculative: {type: "draft"}` needs one. */
  readonly draftModel?: Model | null;
  readonly context?: { readonly draftModel: Model | null };
}

export type CompletionTargetLike = CompletionTarget | TokenGenerator;

function isCompletionTarget(t: CompletionTargetLike): t is CompletionTarget {
  return typeof (t as Partial<CompletionTarget>).chatInfo === "function";
}

/** The general form of any accepted target. */
export function completionTarget(target: CompletionTargetLike): CompletionTarget {
  if (target !== null && typeof target === "object") {
    if (isCompletionTarget(target)) return target;
    if (typeof target.generate === "function" && typeof target.model === "object" && target.model !== null) return new TokenGeneratorTarget(target);
  }
  throw new LlamapegError("ERR_INVALID_ARGUMENT", "the completion target must be a Context, a Sequence or a CompletionTarget", { where: "target" });
}

const decoder = new TextDecoder();
function specialText(model: Model, id: number | null): string {
  return id === null ? "" : decoder.decode(model.tokenPiece(id, { special: true }));
}

/**
 * The prompt's token ids: BOS/EOS as the model's tokenizer adds them, special-token text parsed
 * only outside message segments.
 */
export function tokenizePrompt(model: Model, prompt: PromptInput): number[] {
  const segments = textSegmentsOf(prompt);
  if (segments.length === 0) return Array.from(model.tokenize(prompt.text, { addSpecial: true, parseSpecial: true }));
  return Array.from(tokenizeChatPrompt(model, prompt.text, segments));
}

/** `tokenizePrompt` off the JS thread for long prompts (the target's own tokenization). */
export async function tokenizePromptAsync(model: Model, prompt: PromptInput): Promise<Int32Array> {
  const segments = textSegmentsOf(prompt);
  if (segments.length === 0) return model.tokenizeAsync(prompt.text, { addSpecial: true, parseSpecial: true });
  return tokenizeChatPromptAsync(model, prompt.text, segments);
}

/** The message ranges in UTF-16 code units: `textSegments` as given, else `segments` converted. */
function textSegmentsOf(prompt: PromptInput): readonly PromptTextSegment[] {
  if (prompt.textSegments !== undefined) return prompt.textSegments;
  return prompt.segments === undefined || prompt.segments.length === 0 ? [] : segmentUnitRanges(prompt.text, prompt.segments);
}

/** UTF-8 byte ranges of `text` as UTF-16 ranges (the local tokenizer slices JS strings). */
function segmentUnitRanges(text: string, segments: readonly PromptByteSegment[]): PromptTextSegment[] {
  const out: PromptTextSegment[] = [];
  let unit = 0;
  let byte = 0;
  const to = (target: number, i: number): number => {
    while (byte < target && unit < text.length) {
      const c = text.codePointAt(unit)!;
      byte += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      unit += c >= 0x10000 ? 2 : 1;
    }
    if (byte !== target) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `prompt segment ${i} does not start and end on character boundaries inside the prompt (byte ${target})`, { where: `prompt.segments[${i}]` });
    }
    return unit;
  };
  segments.forEach((s, i) => {
    if (!Number.isInteger(s.start) || !Number.isInteger(s.end) || s.start < byte || s.end < s.start) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `prompt segments must be sorted, disjoint byte ranges inside the prompt (got ${s.start}-${s.end})`, { where: "prompt.segments" });
    }
    const start = to(s.start, i);
    out.push({ start, end: to(s.end, i) });
  });
  return out;
}

/** The plan's grammar on the native options, its triggers mapped onto the model's vocabulary (llama/triggers.ts). */
function nativeGrammar(model: Model, g: SamplingGrammar): { grammar: GrammarOptions; preserve: string[] } {
  if (!g.lazy) return { grammar: g.prefill === "" ? { gbnf: g.gbnf } : { gbnf: g.gbnf, prefill: g.prefill }, preserve: [] };
  const mapped = mapTriggers(g.triggers, modelVocabulary(model));
  return { grammar: { gbnf: g.gbnf, lazy: true, triggerPatterns: mapped.patterns, triggerTokens: mapped.tokens }, preserve: mapped.preserve.map((p) => p.text) };
}

/** `CompletionTarget` over a `Context` or a `Sequence`: tokenizes with the model, generates locally. */
class TokenGeneratorTarget implements CompletionTarget {
  readonly #generator: TokenGenerator;

  constructor(generator: TokenGenerator) {
    this.#generator = generator;
  }

  chatInfo(): TargetChatInfo {
    const model = this.#generator.model;
    const name = model.path.split(/[\\/]/).pop() ?? model.path;
    return { name, chatTemplate: model.chatTemplate(), toolUseTemplate: model.chatTemplate("tool_use"), bos: specialText(model, model.bos), eos: specialText(model, model.eos) };
  }

  tokenPiece(token: number): Uint8Array {
    return this.#generator.model.tokenPiece(token, { special: true });
  }

  async generate(request: TargetRequest): Promise<TargetGeneration> {
    const model = this.#generator.model;
    const bias = request.logitBias;
    if (bias !== undefined) {
      for (const id of bias.keys()) {
        if (!Number.isInteger(id) || id < 0 || id >= model.vocabSize) invalidRequest("logit_bias", `token id ${id} is not in this model's vocabulary (0..${model.vocabSize - 1})`);
      }
    }
    // logit bias and log probabilities as the target contract reads them (an empty bias, or
    // topLogprobs without logprobs, asks for nothing)
    const { logitBias: _bias, logprobs: _logprobs, topLogprobs: _top, ...sampling } = pickSampling(request);
    const grammar = request.grammar !== null ? nativeGrammar(model, request.grammar) : null;
    const options: GenerateOptions = {
      ...sampling,
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      ...(bias !== undefined && bias.size > 0 ? { logitBias: new Map(bias) } : {}),
      ...(request.logprobs === true ? { logprobs: true, topLogprobs: request.topLogprobs ?? 0 } : {}),
      ...(request.signal !== undefined ? { signal: request.signal } : {}),
      ...(grammar !== null ? { grammar: grammar.grammar } : {}),
      ...(request.reasoningBudget !== undefined ? { reasoningBudget: request.reasoningBudget } : {}),
      ...(request.fastForward === true ? { fastForward: true } : {}),
      ...(request.speculative !== undefined ? { speculative: request.speculative } : {}),
      // The native sampler keeps only single tokens whole; llama.cpp skips the others too.
      preservedTokens: [...new Set([...request.preservedTokens.filter((t) => singleToken(model, t) !== null), ...(grammar?.preserve ?? [])])],
    };
    if (request.speculative?.type === "draft" && (this.#generator.draftModel ?? this.#generator.context?.draftModel ?? null) === null) {
      invalidRequest("speculative", 'type "draft" needs a context created with a draftModel (createContext({draftModel}), `llamapeg serve --draft-model`)');
    }
    // A long prompt tokenizes on a native thread: the event loop keeps running meanwhile.
    const ids = await tokenizePromptAsync(model, request.prompt);
    return this.#generator.generate(ids, options);
  }
}
