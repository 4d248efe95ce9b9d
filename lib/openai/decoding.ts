/**
 * How a request's tokens are decoded, not which ones are admitted: llamapeg's `fast_forward`
 * (text the grammar forces, decoded as a batch: docs/grammar-engine.md, "Forced text") and
 * `speculative` (prompt-lookup drafts verified in one batch: docs/speculative.md). Neither changes
 * the text the grammar admits; each can change which tokens spell it (fast-forward tokenizes
 * forced text as the tokenizer would) or, through batched logits, a greedy near-tie.
 *
 * Defaults: fast-forward on wherever the plan has a grammar, except in `reference_mode`
 * (llama.cpp samples every token one step at a time); speculation off.
 */
import { resolveSpeculative, type SpeculativeOptions } from "../llama/speculative-options.js";
import { invalidRequest } from "./errors.js";

/** What a request asks for; undefined: the default. */
export interface RequestDecoding {
  fastForward: boolean | undefined;
  speculative: SpeculativeOptions | undefined;
}

const SPECULATIVE_KEYS: Record<string, keyof SpeculativeOptions> = {
  type: "type",
  draft_max: "draftMax",
  draft_min: "draftMin",
  ngram_min: "ngramMin",
  ngram_max: "ngramMax",
  p_min: "pMin",
  text_lookup: "textLookup",
};

/** [min, max, integer] */
const RANGES: Record<string, [number, number, boolean]> = { draft_max: [1, 256, true], draft_min: [1, 256, true], ngram_min: [1, 16, true], ngram_max: [1, 16, true], p_min: [0, 1, false] };

/** Reads `fast_forward` and `speculative` (null is absent); a bad value is a 400 naming the field. */
export function decodingFromRequest(r: Record<string, unknown>): RequestDecoding {
  const ff = r.fast_forward;
  if (ff !== undefined && ff !== null && typeof ff !== "boolean") invalidRequest("fast_forward", `expected a boolean, got ${JSON.stringify(ff)}`);
  return { fastForward: typeof ff === "boolean" ? ff : undefined, speculative: speculativeOf(r.speculative) };
}

function speculativeOf(v: unknown): SpeculativeOptions | undefined {
  if (v === undefined || v === null || v === false) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) invalidRequest("speculative", 'expected false or {type: "ngram" | "draft", draft_max?, draft_min?, ngram_min?, ngram_max?, p_min?, text_lookup?}');
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(o)) {
    if (!Object.hasOwn(SPECULATIVE_KEYS, key)) invalidRequest(`speculative.${key}`, `unknown field (expected ${Object.keys(SPECULATIVE_KEYS).join(", ")})`);
    if (value === undefined || value === null) continue;
    if (key === "type") {
      if (value !== "ngram" && value !== "draft") invalidRequest("speculative.type", `expected "ngram" (prompt lookup) or "draft" (the context's draft model), got ${JSON.stringify(value)}`);
    } else if (key === "text_lookup") {
      if (typeof value !== "boolean") invalidRequest("speculative.text_lookup", `expected a boolean, got ${JSON.stringify(value)}`);
    } else {
      const [min, max, integer] = RANGES[key]!;
      if (typeof value !== "number" || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
        invalidRequest(`speculative.${key}`, `expected ${integer ? "an integer" : "a number"} in [${min}, ${max}], got ${JSON.stringify(value)}`);
      }
    }
    out[SPECULATIVE_KEYS[key]!] = value;
  }
  if (out.type === undefined) invalidRequest("speculative.type", 'required: "ngram" or "draft"');
  // the defaults and the checks between fields are generate()'s (one table of defaults)
  try {
    resolveSpeculative(out);
  } catch (error) {
    invalidRequest("speculative", (error as Error).message.replace(/speculative\.(\w+)/g, (_, k: string) => `speculative.${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`));
  }
  return out as unknown as SpeculativeOptions;
}

/** Fast-forward for a plan: as asked, else on with a grammar and off in reference mode. */
export function planFastForward(asked: boolean | undefined, hasGrammar: boolean, referenceMode: boolean): boolean {
  return hasGrammar && (asked ?? !referenceMode);
}
