/** Validation and defaults of `context.generate()` options, and grammar trigger resolution. */
import { checkGbnf } from "../gbnf/check.js";
import { gbnfChecked } from "../gbnf/checked.js";
import { LlamapegError, ArgumentTypeError } from "../errors.js";
import type { NativeGenerateOptions, NativeGrammar } from "../native/binding.js";
import type { Model } from "./model.js";
import { mapTriggers, modelVocabulary } from "./triggers.js";
import { resolveLogitBias, resolveSampling, SAMPLING_KEYS, type SamplingOptions } from "./sampling-params.js";
import { bool, checkKeys, int, oneOf, optionalObject, str, stringList, tokenList } from "./validate.js";

/** Where the trigger mapping lives now (triggers.ts); re-exported for this module's callers. */
export { escapeRegex } from "./triggers.js";
import { resolveSpeculative, type SpeculativeOptions } from "./speculative-options.js";
import { resolveReasoningBudget, type ReasoningBudgetOptions } from "./reasoning-budget.js";

export interface GrammarOptions {
  /** GBNF source (llama.cpp's grammar format). */
  gbnf: string;
  /** Start rule. Default "root". */
  root?: string;
  /** Lazy: generate freely until a trigger appears, then follow the grammar. Default false. */
  lazy?: boolean;
  /** Literal texts that trigger a lazy grammar. A word that is one special token (e.g.
   * `<tool_call>`) becomes a token trigger and is rendered as text in pieces. */
  triggerWords?: string[];
  /** Regexes (ECMAScript syntax, as llama.cpp's std::regex) matched against the output so far;
   * the grammar starts at the first capture group (or the match). */
  triggerPatterns?: string[];
  /** Token ids that trigger a lazy grammar. */
  triggerTokens?: number[];
  /**
   * Text the grammar consumes before the first sampled token, because the prompt already ends with
   * it (llama.cpp's prefill of the generation prompt). Eager grammars only. Default "".
   */
  prefill?: string;
}

/**
 * `context.generate()` options: the sampling (`SamplingOptions`, sampling-params.ts: the one table
 * of sampling fields, defaults and ranges) and what else shapes one generation.
 */
export interface GenerateOptions extends SamplingOptions {
  /** Most tokens to generate. Default: until end of generation or a full context. */
  maxTokens?: number;
  logitBias?: Record<number, number> | Map<number, number>;
  /** Token ids that end the generation (stopReason "stop"); not emitted. EOG tokens always stop. */
  stopTokens?: number[];
  /** Aborts the generation (stopReason "abort"). */
  signal?: AbortSignal;
  grammar?: GrammarOptions;
  /** Strings that are single special tokens; their pieces are rendered as text. */
  preservedTokens?: string[];
  /** Render every control token's text in pieces. Default false. */
  special?: boolean;
  /**
   * How the grammar constrains the candidates (after a rejection, or first with `grammarFirst`):
   * "fast" (default) with the mask engine (docs/grammar-engine.md), "reference" with llama.cpp's
   * own pass over the whole vocabulary. Both admit exactly the same tokens.
   */
  grammarResample?: "fast" | "reference";
  /**
   * Constrain every candidate before sampling (llama.cpp's `grammar_first`): samples from the
   * exact constrained distribution at temperature > 0. Default false: sample first, and constrain
   * only when the grammar rejects the sampled token (llama.cpp's default, cheaper).
   */
  grammarFirst?: boolean;
  /**
   * Fast-forward: where the grammar leaves only one way to continue (a tool name, a property name,
   * `", "`, a closing marker), those bytes are tokenized as the tokenizer spells them after the
   * previous token and decoded in one batch with it instead of one step each; the tokens are
   * emitted with `forced: true` and counted in `stats.forcedTokens`. The text is always one the
   * grammar admits, but the model's own split of forced text may differ from the tokenizer's, so
   * greedy outputs can differ from `fastForward: false` (today's one-token steps, llama.cpp's
   * behaviour). Default: false (opt in; it changes which sampling path a seeded run takes, and
   * with checkpoints one gemma3 turn came out differently warm and cold). With `logprobs`, forced
   * tokens have no distribution to report: with `fastForward: true` they carry log probability 0.
   */
  fastForward?: boolean;
  /**
   * Speculative decoding (docs/speculative.md): `{type: "ngram"}` drafts the next tokens from an
   * earlier occurrence of the last few in the prompt or output, verifies the draft in one batch and
   * keeps what the sampler itself produces (so under a grammar only tokens it admits). Counted in
   * `stats.draftTokens` / `draftAcceptedTokens`. Default false (off): the output is the output
   * without it wherever a batch computes the same logits as one-token steps, which llama.cpp does
   * not promise for every backend. Ignored (nothing drafted) on memories that cannot trim
   * (recurrent, hybrid, SWA without swaFull).
   */
  speculative?: SpeculativeOptions | false;
  /**
   * A bound on reasoning (reasoning-budget.ts): after `tokens` tokens inside a block opened by
   * `start`, the message and `end[0]` are forced and the model answers. Counted in
   * `stats.reasoningTokens` / `reasoningForcedTokens`. The chat layers (OpenAI
   * `reasoning_budget_tokens`, Anthropic `thinking.budget_tokens`, Responses `reasoning.effort`)
   * fill the markers from the template's analysis. Default: none.
   */
  reasoningBudget?: ReasoningBudgetOptions;
  /**
   * When the sequence is full: false stops with stopReason "context_full"; true (or `{keep}`)
   * drops the older half of its tokens after the first `keep` and goes on, as llama-server's
   * context shift does (`keep` defaults to 1 when the model adds BOS, else 0). Default: the
   * context's `contextShift` option (false).
   */
  contextShift?: ContextShift;
}

export type ContextShift = boolean | { keep?: number };

export interface ResolvedGenerateOptions {
  native: NativeGenerateOptions;
  signal: AbortSignal | undefined;
}

const generateKeys = [
  "maxTokens",
  ...SAMPLING_KEYS,
  "stopTokens",
  "signal",
  "grammar",
  "preservedTokens",
  "special",
  "grammarResample",
  "grammarFirst",
  "fastForward",
  "speculative",
  "reasoningBudget",
  "contextShift",
] as const;

const grammarKeys = ["gbnf", "root", "lazy", "triggerWords", "triggerPatterns", "triggerTokens", "prefill"] as const;

/** Validates a contextShift option (of a context or a generation) into the native pair. */
export function resolveContextShift(model: Model, value: unknown, name: string): { contextShift: boolean; contextShiftKeep: number } {
  const bosKeep = model.addBos ? 1 : 0;
  if (value === undefined || value === false) return { contextShift: false, contextShiftKeep: bosKeep };
  if (value === true) return { contextShift: true, contextShiftKeep: bosKeep };
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ArgumentTypeError(`${name} must be a boolean or {keep: number}`);
  const o = value as Record<string, unknown>;
  checkKeys(o, ["keep"], name);
  return { contextShift: true, contextShiftKeep: int(o.keep, `${name}.keep`, bosKeep, 0, 1 << 30) };
}

export function resolveGenerateOptions(
  model: Model,
  options: GenerateOptions | undefined,
  defaults: { contextShift?: ContextShift } = {},
): ResolvedGenerateOptions {
  const o = optionalObject(options, "options");
  checkKeys(o, generateKeys, "generate options");
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ArgumentTypeError("signal must be an AbortSignal");

  const preserved = new Set<number>();
  for (const [i, text] of stringList(o.preservedTokens, "preservedTokens").entries()) {
    const ids = model.tokenize(text, { addSpecial: false, parseSpecial: true });
    if (ids.length !== 1) {
      throw new LlamapegError(
        "ERR_INVALID_ARGUMENT",
        `preservedTokens[${i}] = ${JSON.stringify(text)} is ${ids.length} tokens in this vocabulary; it must be exactly one`,
        { where: `preservedTokens[${i}]` },
      );
    }
    preserved.add(ids[0]!);
  }

  const grammar = o.grammar === undefined ? null : resolveGrammar(model, o.grammar, preserved);

  const native: NativeGenerateOptions = {
    maxTokens: int(o.maxTokens, "maxTokens", -1, 0, Number.MAX_SAFE_INTEGER),
    ...resolveSampling(o),
    ...resolveLogitBias(o.logitBias, model.vocabSize),
    logprobs: bool(o.logprobs, "logprobs", false),
    topLogprobs: resolveTopLogprobs(o),
    stopTokens: tokenList(o.stopTokens, "stopTokens", model.vocabSize),
    preservedTokens: Int32Array.from(preserved),
    special: bool(o.special, "special", false),
    grammar,
    grammarResample: oneOf(o.grammarResample, "grammarResample", ["fast", "reference"] as const, "fast"),
    grammarFirst: bool(o.grammarFirst, "grammarFirst", false),
    fastForward: bool(o.fastForward, "fastForward", false) && grammar !== null,
    speculative: resolveSpeculative(o.speculative),
    reasoningBudget: resolveReasoningBudget(model, o.reasoningBudget),
    ...resolveContextShift(model, o.contextShift === undefined ? defaults.contextShift : o.contextShift, "contextShift"),
    // Hand-off tuning: a batch every 16 tokens or 5 ms; at most 256 tokens ahead of the reader.
    flushTokens: 16,
    flushMs: 5,
    windowTokens: 256,
  };
  return { native, signal: signal as AbortSignal | undefined };
}

function resolveTopLogprobs(o: Record<string, unknown>): number {
  const n = int(o.topLogprobs, "topLogprobs", 0, 0, 20);
  if (n > 0 && o.logprobs !== true) throw new ArgumentTypeError("topLogprobs needs logprobs: true");
  return n;
}

function resolveGrammar(model: Model, value: unknown, preserved: Set<number>): NativeGrammar {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ArgumentTypeError("grammar must be an object");
  const g = value as Record<string, unknown>;
  checkKeys(g, grammarKeys, "grammar");
  const gbnf = str(g.gbnf, "grammar.gbnf");
  if (gbnf.trim().length === 0) throw new ArgumentTypeError("grammar.gbnf must not be empty");
  const root = g.root === undefined ? "root" : str(g.root, "grammar.root");
  // what llama.cpp's grammar parser rejects or chokes on is ERR_GRAMMAR_INVALID before it runs
  if (!gbnfChecked(gbnf, root)) checkGbnf(gbnf, { root });
  const lazy = bool(g.lazy, "grammar.lazy", false);
  const words = stringList(g.triggerWords, "grammar.triggerWords");
  const patterns = stringList(g.triggerPatterns, "grammar.triggerPatterns");
  const tokens = Array.from(tokenList(g.triggerTokens, "grammar.triggerTokens", model.vocabSize));
  if (!lazy && (words.length > 0 || patterns.length > 0 || tokens.length > 0)) {
    throw new ArgumentTypeError("grammar triggers need grammar.lazy = true");
  }
  // A word that is one special token is matched as that token (text matching would miss it when
  // pieces render it as nothing); ordinary words stay text patterns (triggers.ts).
  const mapped = mapTriggers([...patterns.map((value) => ({ type: "pattern" as const, value })), ...words.map((value) => ({ type: "word" as const, value }))], modelVocabulary(model));
  const triggerPatterns = mapped.patterns;
  tokens.push(...mapped.tokens);
  for (const p of mapped.preserve) preserved.add(p.id);
  if (lazy && triggerPatterns.length === 0 && tokens.length === 0) {
    throw new ArgumentTypeError("a lazy grammar needs at least one trigger (triggerWords, triggerPatterns or triggerTokens)");
  }
  const prefill = g.prefill === undefined ? "" : str(g.prefill, "grammar.prefill");
  if (lazy && prefill !== "") throw new ArgumentTypeError("grammar.prefill needs an eager grammar (a lazy grammar starts at its trigger)");
  return { gbnf, root, lazy, triggerPatterns, triggerTokens: Int32Array.from(tokens), prefillTokens: prefillTokens(model, prefill) };
}

const decoder = new TextDecoder();
const isSpace = (c: string | undefined): boolean => c !== undefined && " \t\n\v\f\r".includes(c);

/** The prefill's tokens as llama.cpp's `common_sampler_init` takes them (a leading space token some tokenizers add is left out). */
function prefillTokens(model: Model, prefill: string): Int32Array {
  if (prefill === "") return new Int32Array(0);
  const ids = Array.from(model.tokenize(prefill, { addSpecial: false, parseSpecial: true }));
  if (ids.length > 0 && !isSpace(prefill[0]) && isSpace(decoder.decode(model.tokenPiece(ids[0]!, { special: true }))[0])) ids.shift();
  return Int32Array.from(ids);
}
