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
import type { GrammarTrigger } from "../chat/plan.js";
import { tokenizeChatPrompt, tokenizeChatPromptAsync } from "../chat/prompt.js";
import { LlamapegError } from "../errors.js";
import { invalidRequest } from "./errors.js";
import type { GenerateOptions, GrammarOptions } from "../llama/generate-options.js";
import type { GeneratedToken, GenerationStats } from "../llama/generation.js";
import type { Model } from "../llama/model.js";

/** Bytes [start, end) of the prompt's UTF-8 encoding that came from a message value. */
export interface PromptSegment {
  start: number;
  end: number;
}

/** A rendered prompt. Without `segments`, all of it is template text (special tokens parsed everywhere). */
export interface PromptInput {
  text: string;
  /** Message-value ranges, sorted and disjoint: tokenized with special-token parsing off. */
  segments?: readonly PromptSegment[];
}

/** The sampler side of a plan. */
export interface SamplingGrammar {
  gbnf: string;
  /** Apply `gbnf` only once a trigger appears in the output. */
  lazy: boolean;
  /** The plan's triggers (lazy only): words, patterns (`pattern_full` anchored), tokens by text. */
  triggers: GrammarTrigger[];
  /**
   * Text the grammar consumes before the first sampled token (eager grammars; "" for none): the
   * generation prompt, which the prompt already ends with. llama.cpp's prefill
   * (`common_sampler_init`; llama-server: `generation_prompt` with `grammar_type: "tool_calls"`).
   */
  prefill: string;
}

export interface TargetRequest {
  prompt: PromptInput;
  /** null: sample freely. */
  grammar: SamplingGrammar | null;
  /** Marker texts the sampler keeps whole; the target keeps those that are one token for it. */
  preservedTokens: readonly string[];
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  /** llama.cpp's top_k (0 disables). */
  topK?: number;
  /** llama.cpp's min_p (0 disables). */
  minP?: number;
  /** llama.cpp's repeat_penalty over the last 64 tokens (1 disables). */
  repeatPenalty?: number;
  /** OpenAI's penalties (-2..2) over the last 64 tokens. */
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** token id -> bias added to its logit; the target refuses ids outside its vocabulary (400 naming logit_bias). */
  logitBias?: ReadonlyMap<number, number>;
  /**
   * Each item's `extra` carries (token id, log probability) pairs: the sampled token first, then the
   * `topLogprobs` most likely ones. A target that cannot report them refuses the request (400
   * naming logprobs).
   */
  logprobs?: boolean;
  topLogprobs?: number;
  /** uint32 */
  seed?: number;
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
/** Per model: marker text -> its token id when it is one token, else null. */
const singleTokens = new WeakMap<Model, Map<string, number | null>>();

function singleToken(model: Model, text: string): number | null {
  let known = singleTokens.get(model);
  if (known === undefined) singleTokens.set(model, (known = new Map()));
  let id = known.get(text);
  if (id === undefined) {
    const ids = model.tokenize(text, { addSpecial: false, parseSpecial: true });
    id = ids.length === 1 ? ids[0]! : null;
    known.set(text, id);
  }
  return id;
}

function specialText(model: Model, id: number | null): string {
  return id === null ? "" : decoder.decode(model.tokenPiece(id, { special: true }));
}

/**
 * The prompt's token ids: BOS/EOS as the model's tokenizer adds them, special-token text parsed
 * only outside message segments.
 */
export function tokenizePrompt(model: Model, prompt: PromptInput): number[] {
  const segments = prompt.segments ?? [];
  if (segments.length === 0) return Array.from(model.tokenize(prompt.text, { addSpecial: true, parseSpecial: true }));
  return Array.from(tokenizeChatPrompt(model, prompt.text, segmentUnitRanges(prompt.text, segments)));
}

/** `tokenizePrompt` off the JS thread for long prompts (the target's own tokenization). */
export async function tokenizePromptAsync(model: Model, prompt: PromptInput): Promise<Int32Array> {
  const segments = prompt.segments ?? [];
  if (segments.length === 0) return model.tokenizeAsync(prompt.text, { addSpecial: true, parseSpecial: true });
  return tokenizeChatPromptAsync(model, prompt.text, segmentUnitRanges(prompt.text, segments));
}

/** UTF-8 byte ranges of `text` as UTF-16 ranges (the local tokenizer slices JS strings). */
function segmentUnitRanges(text: string, segments: readonly PromptSegment[]): PromptSegment[] {
  const out: PromptSegment[] = [];
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

/** llama.cpp's trigger kinds on the native options: `pattern_full` anchored, `token` by id. */
function nativeGrammar(model: Model, g: SamplingGrammar): GrammarOptions {
  if (!g.lazy) return g.prefill === "" ? { gbnf: g.gbnf } : { gbnf: g.gbnf, prefill: g.prefill };
  const triggerWords: string[] = [];
  const triggerPatterns: string[] = [];
  const triggerTokens: number[] = [];
  for (const t of g.triggers) {
    switch (t.type) {
      case "word":
        triggerWords.push(t.value);
        break;
      case "pattern":
        triggerPatterns.push(t.value);
        break;
      case "pattern_full":
        triggerPatterns.push(`${t.value.startsWith("^") ? "" : "^"}${t.value}${t.value.endsWith("$") ? "" : "$"}`);
        break;
      case "token": {
        const id = t.token ?? singleToken(model, t.value);
        if (id !== null) triggerTokens.push(id);
        else triggerWords.push(t.value);
        break;
      }
    }
  }
  return { gbnf: g.gbnf, lazy: true, triggerWords, triggerPatterns, triggerTokens };
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
    const options: GenerateOptions = {
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.topP !== undefined ? { topP: request.topP } : {}),
      ...(request.topK !== undefined ? { topK: request.topK } : {}),
      ...(request.minP !== undefined ? { minP: request.minP } : {}),
      ...(request.repeatPenalty !== undefined ? { repeatPenalty: request.repeatPenalty } : {}),
      ...(request.frequencyPenalty !== undefined ? { frequencyPenalty: request.frequencyPenalty } : {}),
      ...(request.presencePenalty !== undefined ? { presencePenalty: request.presencePenalty } : {}),
      ...(bias !== undefined && bias.size > 0 ? { logitBias: new Map(bias) } : {}),
      ...(request.logprobs === true ? { logprobs: true, topLogprobs: request.topLogprobs ?? 0 } : {}),
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      ...(request.signal !== undefined ? { signal: request.signal } : {}),
      ...(request.grammar !== null ? { grammar: nativeGrammar(model, request.grammar) } : {}),
      // The native sampler keeps only single tokens whole; llama.cpp skips the others too.
      preservedTokens: request.preservedTokens.filter((t) => singleToken(model, t) !== null),
    };
    // A long prompt tokenizes on a native thread: the event loop keeps running meanwhile.
    const ids = await tokenizePromptAsync(model, request.prompt);
    return this.#generator.generate(ids, options);
  }
}
