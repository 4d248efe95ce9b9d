/**
 * Overriding analysis fields: users who know better than the probes (or need a workaround the
 * analysis lacks) replace any field at any depth. Objects merge, arrays and scalars replace;
 * unknown fields and wrong types are errors that name the field.
 */
import { LlamapegError } from "../../errors.js";
import type { TemplateAnalysis, TemplateAnalysisOverrides } from "./types.js";

const ENUMS: Record<string, readonly string[]> = {
  "reasoning.mode": ["none", "tag_based", "tools_only"],
  "content.mode": ["plain", "always_wrapped", "wrapped_with_reasoning"],
  "tools.format.mode": ["none", "json_native", "tag_with_json", "tag_with_tagged"],
  "tools.callId.pos": ["none", "pre_func_name", "between_func_and_args", "post_args"],
};

/** Returns a copy of `analysis` with `overrides` deep-merged into it. */
export function withOverrides(analysis: TemplateAnalysis, overrides: TemplateAnalysisOverrides): TemplateAnalysis {
  const out = structuredClone(analysis);
  merge(out as unknown as Record<string, unknown>, overrides as unknown, "");
  return out;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function merge(target: Record<string, unknown>, patch: unknown, path: string): void {
  if (kindOf(patch) !== "object") {
    fail(path === "" ? "overrides" : path, `must be an object, got ${kindOf(patch)}`);
  }
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    const where = path === "" ? key : `${path}.${key}`;
    if (value === undefined) continue;
    if (where === "templateHash") fail(where, "cannot be overridden");
    if (!Object.hasOwn(target, key)) fail(where, "is not an analysis field");
    const current = target[key];
    const want = kindOf(current);
    if (kindOf(value) !== want) fail(where, `must be ${want === "object" ? "an object" : `a ${want}`}, got ${kindOf(value)}`);
    if (want === "object") {
      merge(current as Record<string, unknown>, value, where);
    } else {
      const allowed = ENUMS[where];
      if (allowed !== undefined && !allowed.includes(value as string)) fail(where, `must be one of ${allowed.join(", ")}`);
      target[key] = structuredClone(value);
    }
  }
}

function fail(where: string, message: string): never {
  throw new LlamapegError("ERR_INVALID_ARGUMENT", `analysis override ${where} ${message}`, { where });
}
