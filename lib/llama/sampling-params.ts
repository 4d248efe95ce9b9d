/**
 * The sampling parameters: one type and one table, from an OpenAI request to the sampler.
 *
 * A request's sampling travels as one `SamplingOptions` mixin, the same fields under the same
 * names at every step, copied with `pickSampling` (never field by field):
 *
 *   lib/openai/request.ts   normalizeChatRequest  OpenAI keys -> SamplingOptions (`samplingFromRequest`)
 *   lib/openai/completion.ts  -> TargetRequest (extends SamplingOptions)
 *   lib/openai/target.ts      -> GenerateOptions (extends SamplingOptions)
 *   lib/llama/generate-options.ts  -> the native options (`resolveSampling`: defaults, ranges)
 *   native/generation.cpp    the native options -> lp::SamplingParams (native/sampling.h)
 *   lib/remote/backend.ts    TargetRequest -> llama-server's /completion fields (`serverSampling`)
 *
 * To add a numeric sampling field, add one row to SAMPLING_FIELDS: its default, its range in
 * `context.generate()`, its OpenAI request key (and range there, when it differs) if requests may
 * set it, its llama-server /completion key; then read it in native/generation.cpp (next to
 * `minP`), and add it, with its documentation, to `SamplingOptions` and to NativeGenerateOptions
 * (lib/native/binding.ts): the checks below this table fail to compile until both have it. The
 * request check, the copies, the defaults and the llama-server body all follow from the row.
 * Fields of other kinds (a map, a switch) go in `SamplingOptions` and `SAMPLING_KEYS` by hand, as
 * `logitBias` and `logprobs` do.
 */
import { ArgumentRangeError, ArgumentTypeError } from "../errors.js";
import type { NativeGenerateOptions } from "../native/binding.js";
import { int, num } from "./validate.js";

interface NumericField {
  /** Used when no one sets it (llama.cpp's common_params_sampling default unless noted). */
  default: number;
  /** The range `context.generate()` accepts. */
  min: number;
  max: number;
  integer: boolean;
  /** The OpenAI Chat Completions key (llama.cpp's name for its extensions), and its range there when narrower. */
  request?: { key: string; min?: number; max?: number };
  /** llama-server's /completion key. */
  server: string;
}

/** The numeric sampling fields (see the module comment: the one table to edit). */
export const SAMPLING_FIELDS = {
  /** 0 = greedy. */
  temperature: { default: 0.8, min: 0, max: 100, integer: false, request: { key: "temperature", max: 2 }, server: "temperature" },
  /** 0 disables. */
  topK: { default: 40, min: 0, max: 1 << 30, integer: true, request: { key: "top_k" }, server: "top_k" },
  /** 1 disables. */
  topP: { default: 0.95, min: 0, max: 1, integer: false, request: { key: "top_p" }, server: "top_p" },
  /** 0 disables. */
  minP: { default: 0.05, min: 0, max: 1, integer: false, request: { key: "min_p" }, server: "min_p" },
  /** Over the last `penaltyLastN` tokens; 1 disables. */
  repeatPenalty: { default: 1, min: Number.MIN_VALUE, max: 100, integer: false, request: { key: "repeat_penalty" }, server: "repeat_penalty" },
  frequencyPenalty: { default: 0, min: -2, max: 2, integer: false, request: { key: "frequency_penalty" }, server: "frequency_penalty" },
  presencePenalty: { default: 0, min: -2, max: 2, integer: false, request: { key: "presence_penalty" }, server: "presence_penalty" },
  /** How many recent tokens the three penalties look at. */
  penaltyLastN: { default: 64, min: 0, max: 1 << 20, integer: true, server: "repeat_last_n" },
  /** uint32; -1: the context's seed (random unless set). Requests give any integer, taken modulo 2^32. */
  seed: { default: -1, min: 0, max: 0xffffffff, integer: true, request: { key: "seed", min: -(2 ** 53), max: 2 ** 53 }, server: "seed" },
} as const satisfies Record<string, NumericField>;

export type NumericSamplingField = keyof typeof SAMPLING_FIELDS;

/** The numeric sampling parameters with every default applied (what the native sampler gets). */
export type SamplingParams = { [K in NumericSamplingField]: number };

/**
 * What a request, a target request or `context.generate()` options may set about sampling; unset
 * fields take SAMPLING_FIELDS' defaults where the sampler runs.
 */
export interface SamplingOptions {
  /** 0 = greedy. Default 0.8. */
  temperature?: number;
  /** llama.cpp's top_k. Default 40 (0 disables). */
  topK?: number;
  /** Default 0.95 (1 disables). */
  topP?: number;
  /** llama.cpp's min_p. Default 0.05 (0 disables). */
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
  logitBias?: Record<number, number> | ReadonlyMap<number, number>;
  /**
   * Report each token's log probability: `GeneratedToken.extra` holds (token id, log probability)
   * pairs, the chosen token first, then the `topLogprobs` most likely tokens. Taken from the
   * sampler's candidates after logit bias and penalties, before top-k/top-p/min-p, temperature and
   * the grammar (llama-server's default `n_probs` reports the raw logits' softmax the same way).
   */
  logprobs?: boolean;
  /** With `logprobs`: how many alternatives per token, 0-20. Default 0. */
  topLogprobs?: number;
}

const NUMERIC_KEYS = Object.keys(SAMPLING_FIELDS) as NumericSamplingField[];

/** Every key of `SamplingOptions`: what `pickSampling` copies. */
export const SAMPLING_KEYS = [...NUMERIC_KEYS, "logitBias", "logprobs", "topLogprobs"] as const satisfies readonly (keyof SamplingOptions)[];

export type SamplingKey = (typeof SAMPLING_KEYS)[number];

/** Whether A and B are one type (for the compile-time checks below). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// `SamplingOptions` is written out for the documentation users see (a type mapped from the table
// would show the table's comments); these fail to compile when it and the table differ: its keys
// are the table's and SAMPLING_KEYS' others, each numeric one an optional number.
true satisfies Same<keyof SamplingOptions, SamplingKey>;
true satisfies Same<Pick<SamplingOptions, NumericSamplingField>, Partial<SamplingParams>>;
// NativeGenerateOptions (lib/native, below this layer, cannot import it) takes SamplingParams whole.
true satisfies Same<Pick<NativeGenerateOptions, NumericSamplingField>, SamplingParams>;

/** The sampling fields `o` sets (undefined ones left out), as one object to spread into the next shape. */
export function pickSampling<T extends SamplingOptions>(o: T): Pick<T, SamplingKey> {
  const out: Record<string, unknown> = {};
  for (const k of SAMPLING_KEYS) if (o[k] !== undefined) out[k] = o[k];
  return out as Pick<T, SamplingKey>;
}

/** The numeric fields of `context.generate()` options, checked against their ranges, defaults applied. */
export function resolveSampling(o: Record<string, unknown>): SamplingParams {
  const out = {} as SamplingParams;
  for (const k of NUMERIC_KEYS) {
    const f: NumericField = SAMPLING_FIELDS[k];
    out[k] = (f.integer ? int : num)(o[k], k, f.default, f.min, f.max);
  }
  return out;
}

/** llama-server's /completion fields for the sampling of `o`, every default spelled out (a server started with others samples the same). */
export function serverSampling(o: SamplingOptions): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of NUMERIC_KEYS) out[SAMPLING_FIELDS[k].server] = o[k] ?? SAMPLING_FIELDS[k].default;
  return out;
}

/**
 * The numeric sampling fields of a raw request under their request keys: `check(key, min, max,
 * integer)` reads and range-checks one (and throws its own error), undefined when absent.
 */
export function samplingFromRequest(check: (key: string, min: number, max: number, integer: boolean) => number | undefined): SamplingOptions {
  const out: Record<string, number> = {};
  for (const k of NUMERIC_KEYS) {
    const f: NumericField = SAMPLING_FIELDS[k];
    if (f.request === undefined) continue;
    const v = check(f.request.key, f.request.min ?? f.min, f.request.max ?? f.max, f.integer);
    if (v !== undefined) out[k] = v;
  }
  return out as SamplingOptions;
}

/** The OpenAI request keys of the sampling fields (for the endpoints that pass them through). */
export const SAMPLING_REQUEST_KEYS: readonly string[] = NUMERIC_KEYS.flatMap((k) => {
  const f: NumericField = SAMPLING_FIELDS[k];
  return f.request === undefined ? [] : [f.request.key];
});

/** `logitBias` as the native pair of arrays, each id checked against the vocabulary. */
export function resolveLogitBias(value: unknown, vocabSize: number): { logitBiasTokens: Int32Array; logitBiasValues: Float32Array } {
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
