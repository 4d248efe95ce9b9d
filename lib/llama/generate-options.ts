/** Validation and defaults of `context.generate()` options, and grammar trigger resolution. */
import { checkGbnf } from "../gbnf/check.js";
import { LlamapegError, ArgumentRangeError, ArgumentTypeError } from "../errors.js";
import type { NativeGenerateOptions, NativeGrammar } from "../native/binding.js";
import type { Model } from "./model.js";
import { bool, checkKeys, int, num, oneOf, optionalObject, str, stringList, tokenList } from "./validate.js";

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

export interface GenerateOptions {
  /** Most tokens to generate. Default: until end of generation or a full context. */
  maxTokens?: number;
  /** 0 = greedy. Default 0.8. */
  temperature?: number;
  /** Default 40 (0 disables). */
  topK?: number;
  /** Default 0.95 (1 disables). */
  topP?: number;
  /** Default 0.05 (0 disables). */
  minP?: number;
  /** uint32. Default: the context's seed (random unless set). */
  seed?: number;
  /** Penalty for the last `penaltyLastN` tokens; 1 (default) disables it. */
  repeatPenalty?: number;
  /** OpenAI's: subtracted from a token's logit once per time it occurs in the last `penaltyLastN` tokens. -2..2, default 0. */
  frequencyPenalty?: number;
  /** OpenAI's: subtracted from a token's logit when it occurs in the last `penaltyLastN` tokens. -2..2, default 0. */
  presencePenalty?: number;
  /** How many recent tokens the three penalties look at. Default 64 (llama.cpp's). */
  penaltyLastN?: number;
  /** Added to tokens' logits before anything else: token id -> bias (-Infinity bans the token). */
  logitBias?: Record<number, number> | Map<number, number>;
  /**
   * Report each token's log probability: `GeneratedToken.extra` holds (token id, log probability)
   * pairs, the chosen token first, then the `topLogprobs` most likely tokens. Taken from the
   * sampler's candidates after logit bias and penalties, before top-k/top-p/min-p, temperature and
   * the grammar (llama-server's default `n_probs` reports the raw logits' softmax the same way).
   */
  logprobs?: boolean;
  /** With `logprobs`: how many alternatives per token, 0-20. Default 0. */
  topLogprobs?: number;
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
  "temperature",
  "topK",
  "topP",
  "minP",
  "seed",
  "repeatPenalty",
  "frequencyPenalty",
  "presencePenalty",
  "penaltyLastN",
  "logitBias",
  "logprobs",
  "topLogprobs",
  "stopTokens",
  "signal",
  "grammar",
  "preservedTokens",
  "special",
  "grammarResample",
  "grammarFirst",
  "fastForward",
  "contextShift",
] as const;

const grammarKeys = ["gbnf", "root", "lazy", "triggerWords", "triggerPatterns", "triggerTokens", "prefill"] as const;

/** Escapes a literal for an ECMAScript / std::regex pattern. */
export function escapeRegex(text: string): string {
  return text.replace(/[.^$|()*+?[\]{}\\]/g, "\\$&");
}

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
    temperature: num(o.temperature, "temperature", 0.8, 0, 100),
    topK: int(o.topK, "topK", 40, 0, 1 << 30),
    topP: num(o.topP, "topP", 0.95, 0, 1),
    minP: num(o.minP, "minP", 0.05, 0, 1),
    seed: int(o.seed, "seed", -1, 0, 0xffffffff),
    repeatPenalty: num(o.repeatPenalty, "repeatPenalty", 1, Number.MIN_VALUE, 100),
    frequencyPenalty: num(o.frequencyPenalty, "frequencyPenalty", 0, -2, 2),
    presencePenalty: num(o.presencePenalty, "presencePenalty", 0, -2, 2),
    penaltyLastN: int(o.penaltyLastN, "penaltyLastN", 64, 0, 1 << 20),
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
    ...resolveContextShift(model, o.contextShift === undefined ? defaults.contextShift : o.contextShift, "contextShift"),
    // Hand-off tuning: a batch every 16 tokens or 5 ms; at most 256 tokens ahead of the reader.
    flushTokens: 16,
    flushMs: 5,
    windowTokens: 256,
  };
  return { native, signal: signal as AbortSignal | undefined };
}

function resolveLogitBias(value: unknown, vocabSize: number): { logitBiasTokens: Int32Array; logitBiasValues: Float32Array } {
  if (value === undefined) return { logitBiasTokens: new Int32Array(0), logitBiasValues: new Float32Array(0) };
  let entries: Array<[unknown, unknown]>;
  if (value instanceof Map) entries = [...value.entries()];
  else if (value !== null && typeof value === "object" && !Array.isArray(value)) entries = Object.entries(value);
  else throw new ArgumentTypeError("logitBias must be an object or a Map of token id -> bias");
  const tokens = new Int32Array(entries.length);
  const values = new Float32Array(entries.length);
  entries.forEach(([k, v], i) => {
    const id = typeof k === "number" ? k : typeof k === "string" && /^\d+$/.test(k) ? Number(k) : NaN;
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new ArgumentRangeError(`logitBias key ${JSON.stringify(k)} is not a token id of this vocabulary (0..${vocabSize - 1})`);
    }
    if (typeof v !== "number" || Number.isNaN(v) || v === Infinity) throw new ArgumentRangeError(`logitBias[${id}] must be a finite number or -Infinity`);
    tokens[i] = id;
    values[i] = v;
  });
  return { logitBiasTokens: tokens, logitBiasValues: values };
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
  checkGbnf(gbnf, { root });
  const lazy = bool(g.lazy, "grammar.lazy", false);
  const words = stringList(g.triggerWords, "grammar.triggerWords");
  const patterns = stringList(g.triggerPatterns, "grammar.triggerPatterns");
  const tokens = Array.from(tokenList(g.triggerTokens, "grammar.triggerTokens", model.vocabSize));
  if (!lazy && (words.length > 0 || patterns.length > 0 || tokens.length > 0)) {
    throw new ArgumentTypeError("grammar triggers need grammar.lazy = true");
  }
  const triggerPatterns = [...patterns];
  for (const word of words) {
    const ids = model.tokenize(word, { addSpecial: false, parseSpecial: true });
    // A word that is one special token is matched as that token (text matching would miss it when
    // pieces render it as nothing); ordinary words stay text patterns, which match however the
    // model happens to tokenize them.
    if (ids.length === 1 && model.isSpecial(ids[0]!)) {
      tokens.push(ids[0]!);
      preserved.add(ids[0]!);
    } else {
      triggerPatterns.push(escapeRegex(word));
    }
  }
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
