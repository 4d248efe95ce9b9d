/**
 * Renders probe conversations and compares pairs of them. A rendering that fails is recorded
 * (probe name and the template's message) so the analysis can say which probe failed.
 */
import { calculateDiffSplit, type DiffSplit } from "./diff-split.js";
import type { Json } from "./probes.js";
import type { ProbeTemplate } from "./render.js";
import { toBytes } from "./text.js";
import type { ProbeFailure, TemplateCaps } from "./types.js";

export interface ProbeParams {
  messages: Json[];
  tools?: Json[] | undefined;
  addGenerationPrompt?: boolean;
  enableThinking?: boolean;
}

export interface Comparison {
  diff: DiffSplit;
  /** Both renderings, as byte strings. */
  outputA: string;
  outputB: string;
}

export class Prober {
  readonly failures: ProbeFailure[] = [];

  constructor(
    private readonly template: ProbeTemplate,
    readonly caps: TemplateCaps,
    /** The template source as a byte string (for source-feature checks). */
    readonly source: string,
  ) {}

  /** The rendering as a byte string, or null (recorded under `probe` unless `quiet`) when the template failed. */
  render(probe: string, params: ProbeParams, quiet = false): string | null {
    try {
      const out = this.template.render({
        messages: params.messages,
        tools: params.tools,
        addGenerationPrompt: params.addGenerationPrompt ?? false,
        enableThinking: params.enableThinking ?? true,
      });
      return toBytes(out);
    } catch (e) {
      // a probe that runs out of render budget: the template is too costly to analyse at all
      // (going on would spend the budget again on every probe)
      if ((e as { code?: unknown })?.code === "ERR_TEMPLATE_LIMIT") throw e;
      if (quiet) return null;
      this.failures.push({ probe, message: e instanceof Error ? e.message : String(e) });
      return null;
    }
  }

  /**
   * Renders `a` and `a` changed by `modify`, and splits the two renderings. `quiet`: a failure is
   * not recorded (the caller has a fallback probe).
   */
  compare(probe: string, a: ProbeParams, modify: (b: ProbeParams) => void, quiet = false): Comparison | null {
    const b: ProbeParams = { ...a, messages: [...a.messages] };
    modify(b);
    const outputA = this.render(probe, a, quiet);
    const outputB = this.render(probe, b, quiet);
    if (outputA === null || outputB === null) return null;
    return { diff: calculateDiffSplit(outputA, outputB), outputA, outputB };
  }
}
