/**
 * The `speculative` option of `context.generate()`: speculative decoding for the local target
 * (native/speculative.h; docs/speculative.md), with drafts from prompt lookup (`"ngram"`, no
 * second model) or from the context's draft model (`"draft"`, `createContext({draftModel})`).
 * llama.cpp's counterparts are `--spec-type ngram-simple` (common_ngram_simple_draft) and `-md`
 * (common_speculative's draft model), with other defaults.
 */
import { ArgumentRangeError, ArgumentTypeError } from "../errors.js";
import type { NativeGenerateOptions } from "../native/binding.js";
import { bool, checkKeys, int, num, oneOf } from "./validate.js";

export interface SpeculativeOptions {
  /**
   * "ngram": draft the tokens that followed the last n tokens where they occurred before in the
   * prompt or the output (agents repeat file contents, ids and paths). "draft": the greedy
   * continuation of the context's draft model (a small model with the same vocabulary).
   */
  type: "ngram" | "draft";
  /** Most tokens drafted per step, 1-256. Default 8. */
  draftMax?: number;
  /** A shorter draft is not decoded, 1-draftMax. Default 1. */
  draftMin?: number;
  /** "ngram": the shortest suffix looked up, 1-16. Default 2. */
  ngramMin?: number;
  /** "ngram": the longest suffix looked up (tried first), ngramMin-16. Default 4. */
  ngramMax?: number;
  /**
   * "ngram": where no token n-gram matches, look the text up instead: the last 16 (then 8) bytes
   * written, in the prompt and output as text and as the inside of a JSON string, and draft the
   * text that followed, tokenized. It finds what token n-grams miss: text the model writes in
   * other tokens than the prompt's, and a file shown raw and copied into a tool call's string
   * argument (newlines as `\n`, quotes as `\"`). llama.cpp's lookup is by tokens only. Default true.
   */
  textLookup?: boolean;
  /** "draft": stop the draft where the draft model's greedy token is less likely than this, 0-1. Default 0 (llama.cpp's). */
  pMin?: number;
}

const keys = ["type", "draftMax", "draftMin", "ngramMin", "ngramMax", "pMin", "textLookup"] as const;

/** Validates `speculative` (undefined or false: off) into the native options. */
export function resolveSpeculative(value: unknown): NativeGenerateOptions["speculative"] {
  if (value === undefined || value === false || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new ArgumentTypeError('speculative must be false or {type: "ngram" | "draft", ...}');
  const o = value as Record<string, unknown>;
  checkKeys(o, keys, "speculative");
  if (o.type === undefined) throw new ArgumentTypeError('speculative.type is required ("ngram" or "draft")');
  const type = oneOf(o.type, "speculative.type", ["ngram", "draft"] as const, "ngram");
  const draftMax = int(o.draftMax, "speculative.draftMax", 8, 1, 256);
  const draftMin = int(o.draftMin, "speculative.draftMin", 1, 1, 256);
  if (draftMin > draftMax) throw new ArgumentRangeError(`speculative.draftMin (${draftMin}) must not exceed speculative.draftMax (${draftMax})`);
  if (type === "draft") {
    for (const k of ["ngramMin", "ngramMax", "textLookup"] as const) if (o[k] !== undefined) throw new ArgumentTypeError(`speculative.${k} is for type "ngram" (this is "draft")`);
    const pMin = num(o.pMin, "speculative.pMin", 0, 0, 1);
    return { draftMax, draftMin, ngramMin: 2, ngramMax: 4, model: true, pMin, textLookup: false };
  }
  if (o.pMin !== undefined) throw new ArgumentTypeError('speculative.pMin is for type "draft" (this is "ngram")');
  const ngramMin = int(o.ngramMin, "speculative.ngramMin", 2, 1, 16);
  const ngramMax = int(o.ngramMax, "speculative.ngramMax", Math.max(4, ngramMin), 1, 16);
  if (ngramMin > ngramMax) throw new ArgumentRangeError(`speculative.ngramMin (${ngramMin}) must not exceed speculative.ngramMax (${ngramMax})`);
  const textLookup = bool(o.textLookup, "speculative.textLookup", true);
  return { draftMax, draftMin, ngramMin, ngramMax, model: false, pMin: 0, textLookup };
}
