/**
 * The `speculative` option of `context.generate()`: prompt-lookup (n-gram) speculative decoding
 * for the local target, no second model (native/speculative.h; docs/speculative.md). llama.cpp's
 * counterpart is `--spec-type ngram-simple` (common_ngram_simple_draft), with other defaults.
 */
import { ArgumentRangeError, ArgumentTypeError } from "../errors.js";
import type { NativeGenerateOptions } from "../native/binding.js";
import { checkKeys, int, oneOf } from "./validate.js";

export interface SpeculativeOptions {
  /** "ngram": draft the tokens that followed the last n tokens where they occurred before in the
   * prompt or the output (agents repeat file contents, ids and paths). */
  type: "ngram";
  /** Most tokens drafted per step, 1-256. Default 8. */
  draftMax?: number;
  /** A shorter draft is not decoded, 1-draftMax. Default 1. */
  draftMin?: number;
  /** The shortest suffix looked up, 1-16. Default 2. */
  ngramMin?: number;
  /** The longest suffix looked up (tried first), ngramMin-16. Default 4. */
  ngramMax?: number;
}

const keys = ["type", "draftMax", "draftMin", "ngramMin", "ngramMax"] as const;

/** Validates `speculative` (undefined or false: off) into the native options. */
export function resolveSpeculative(value: unknown): NativeGenerateOptions["speculative"] {
  if (value === undefined || value === false || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new ArgumentTypeError('speculative must be false or {type: "ngram", ...}');
  const o = value as Record<string, unknown>;
  checkKeys(o, keys, "speculative");
  if (o.type === undefined) throw new ArgumentTypeError('speculative.type is required ("ngram")');
  oneOf(o.type, "speculative.type", ["ngram"] as const, "ngram");
  const draftMax = int(o.draftMax, "speculative.draftMax", 8, 1, 256);
  const draftMin = int(o.draftMin, "speculative.draftMin", 1, 1, 256);
  if (draftMin > draftMax) throw new ArgumentRangeError(`speculative.draftMin (${draftMin}) must not exceed speculative.draftMax (${draftMax})`);
  const ngramMin = int(o.ngramMin, "speculative.ngramMin", 2, 1, 16);
  const ngramMax = int(o.ngramMax, "speculative.ngramMax", Math.max(4, ngramMin), 1, 16);
  if (ngramMin > ngramMax) throw new ArgumentRangeError(`speculative.ngramMin (${ngramMin}) must not exceed speculative.ngramMax (${ngramMax})`);
  return { draftMax, draftMin, ngramMin, ngramMax };
}
