/**
 * `analyzeTemplate`: runs the differential analysis on a chat template and returns a plain,
 * JSON-serializable `TemplateAnalysis`, cached by template hash. Order as in the reference:
 * capabilities, reasoning, content, tools, turn starts, preserved tokens, then the targeted
 * corrections keyed on template source features.
 */
import { createHash } from "node:crypto";

import { boundedCache } from "../../cache.js";
import { LlamapegError } from "../../errors.js";
import { analyzeContent } from "./content.js";
import { applyCorrections } from "./corrections.js";
import { withOverrides } from "./overrides.js";
import { Prober } from "./prober.js";
import { assistantMsg, userMsg } from "./probes.js";
import { analyzeReasoning } from "./reasoning.js";
import { compileProbeTemplate } from "./render.js";
import { detectAssistantStart, detectUserStart } from "./roles.js";
import { trimWhitespace } from "../normalize.js";
import { fromBytes, toBytes } from "./text.js";
import { analyzeTools } from "./tools.js";
import type { TemplateAnalysis, TemplateAnalysisOverrides } from "./types.js";

export interface AnalyzeTemplateOptions {
  /** What the template sees as `bos_token` (default ""). */
  bosToken?: string;
  /** What the template sees as `eos_token` (default ""). */
  eosToken?: string;
  /** Fields to replace in the result (deep-merged; arrays replace). See `withOverrides`. */
  overrides?: TemplateAnalysisOverrides;
  /** Throw when any probe fails to render instead of recording it in `probeFailures`. */
  strict?: boolean;
}

const cache = boundedCache<string, TemplateAnalysis>(64);

/**
 * Analyses a chat template by rendering probe conversations that differ in one respect.
 *
 * Throws `ERR_TEMPLATE_ANALYSIS` (with `where` naming the probe) when the template does not
 * compile, cannot render a plain user/assistant exchange, or renders a tool call the analysis
 * cannot read. Probes that merely fail to render are listed in `probeFailures` (or thrown, with
 * `strict`), never silently skipped.
 */
export function analyzeTemplate(source: string, options: AnalyzeTemplateOptions = {}): TemplateAnalysis {
  if (typeof source !== "string") {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "analyzeTemplate: source must be a string", { where: "source" });
  }
  const bosToken = options.bosToken ?? "";
  const eosToken = options.eosToken ?? "";
  const hash = createHash("sha256").update(source).digest("hex");
  const key = `${hash}\u0000${bosToken}\u0000${eosToken}`;

  const analysis = cache.getOrSet(key, () => runAnalysis(source, bosToken, eosToken, hash));
  if (options.strict && analysis.probeFailures.length > 0) {
    const f = analysis.probeFailures[0]!;
    throw new LlamapegError("ERR_TEMPLATE_ANALYSIS", `probe ${f.probe} failed to render: ${f.message}`, { where: f.probe });
  }
  const copy = structuredClone(analysis);
  return options.overrides === undefined ? copy : withOverrides(copy, options.overrides);
}

/** Drops every cached analysis (tests, or a long-lived process that swaps templates). */
export function clearTemplateAnalysisCache(): void {
  cache.clear();
}

function runAnalysis(source: string, bosToken: string, eosToken: string, hash: string): TemplateAnalysis {
  const template = compileProbeTemplate(source, { bosToken, eosToken });
  const caps = template.caps;
  const prober = new Prober(template, caps, toBytes(template.source));

  const baseline = prober.render("baseline", { messages: [userMsg, assistantMsg] });
  if (baseline === null) {
    const f = prober.failures[0]!;
    throw new LlamapegError(
      "ERR_TEMPLATE_ANALYSIS",
      `probe baseline failed: the template cannot render a user message followed by an assistant reply: ${f.message}`,
      { where: "baseline" },
    );
  }
  prober.failures.length = 0;

  const reasoning = analyzeReasoning(prober);
  const content = analyzeContent(prober, reasoning);
  const tools = analyzeTools(prober, reasoning);
  const a: TemplateAnalysis = {
    templateHash: hash,
    caps,
    userStart: "",
    assistantStart: detectAssistantStart(prober, reasoning),
    reasoning,
    content,
    tools,
    preservedTokens: [],
    additionalStops: [],
    corrections: [],
    probeFailures: prober.failures,
  };
  a.userStart = detectUserStart(prober);
  a.preservedTokens = collectPreservedTokens(a);
  a.corrections = applyCorrections(prober.source, a);
  return { ...decodeStrings({ ...a, probeFailures: [] }), probeFailures: prober.failures };
}

/** Every non-empty marker, trimmed, once, in a fixed order. */
function collectPreservedTokens(a: TemplateAnalysis): string[] {
  const out: string[] = [];
  const { format: section, function: fn, arguments: args, callId } = a.tools;
  for (const m of [
    a.reasoning.start,
    a.reasoning.end,
    a.content.start,
    a.content.end,
    section.sectionStart,
    section.sectionEnd,
    section.perCallStart,
    section.perCallEnd,
    fn.namePrefix,
    fn.nameSuffix,
    fn.argsSeparator,
    fn.close,
    args.start,
    args.end,
    args.namePrefix,
    args.nameSuffix,
    args.separator,
    args.valuePrefix,
    args.valueSuffix,
    callId.prefix,
    callId.suffix,
  ]) {
    const t = trimWhitespace(m);
    if (t !== "" && !out.includes(t)) out.push(t);
  }
  return out;
}

/** The analysis ran on byte strings; turn every string back into text. */
function decodeStrings<T>(value: T): T {
  if (typeof value === "string") return fromBytes(value) as T;
  if (Array.isArray(value)) return value.map((v) => decodeStrings(v)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = k === "templateHash" ? v : decodeStrings(v);
    return out as T;
  }
  return value;
}
