/**
 * Template analysis vs the reference: for every vendored template, our `analyzeTemplate` and the
 * reference's `autoparser::analyze_template` (harness command `chat.analyze`) are compared field
 * by field (the reference gets the template with the load-time source patches of
 * `common_chat_templates_init`, which is what its apply path analyses). Known differences live in test/fixtures/analysis/parity-baseline.json with the reason;
 * a new difference fails, a difference that went away is reported.
 *
 * `LLAMAPEG_WRITE_ANALYSIS_DOCS=1` regenerates the per-template table in docs/analysis.md.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { analyzeTemplate, type TemplateAnalysis } from "../../lib/chat/analysis/index.js";
import { detectSpecializedTemplate } from "../../lib/chat/families/registry.js";
import { patchTemplateSource } from "../../lib/chat/source-patches.js";
import { spliceDocTable } from "../support/doc-table.js";
import { getHarness, type Harness } from "../support/harness.js";

const root = new URL("../../", import.meta.url);
const templatesDir = new URL("vendor/llama.cpp/models/templates/", root);
const baselinePath = new URL("test/fixtures/analysis/parity-baseline.json", root);
const docsPath = new URL("docs/analysis.md", root);

const BOS = "<s>";
const EOS = "</s>";

interface BaselineEntry {
  /** Field paths where we knowingly differ ("error" when only one side fails). */
  differs: string[];
  why: string;
}
const baseline: Record<string, BaselineEntry> = JSON.parse(readFileSync(baselinePath, "utf8"));

const templates = readdirSync(templatesDir)
  .filter((f) => f.endsWith(".jinja"))
  .sort();
// the synthetic templates of the unit tests: their expectations must be the reference's too
const fixturesDir = new URL("test/fixtures/analysis/", root);
const fixtures = readdirSync(fixturesDir)
  .filter((f) => f.endsWith(".jinja"))
  .sort();

type Flat = Map<string, unknown>;

/** The reference's JSON (C++ field names, enum names) in our shape, flattened to field paths. */
function flattenReference(ref: Record<string, any>): Flat {
  const lower = (s: string) => s.toLowerCase();
  const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  const out: Flat = new Map();
  for (const [k, v] of Object.entries(ref.caps as Record<string, boolean>)) out.set(`caps.${camel(k)}`, v);
  out.set("userStart", ref.user_start);
  out.set("assistantStart", ref.assistant_start);
  out.set("reasoning.mode", lower(ref.reasoning.mode));
  out.set("reasoning.start", ref.reasoning.start);
  out.set("reasoning.end", ref.reasoning.end);
  out.set("content.mode", lower(ref.content.mode));
  for (const k of ["start", "end", "requires_nonnull_content"]) out.set(`content.${camel(k)}`, ref.content[k]);
  const t = ref.tools;
  for (const [k, v] of Object.entries(t.format as Record<string, unknown>)) {
    if (k.endsWith("_b64")) continue;
    out.set(`tools.format.${camel(k)}`, k === "mode" ? lower(v as string) : v);
  }
  for (const part of ["function", "arguments"]) {
    for (const [k, v] of Object.entries(t[part] as Record<string, unknown>)) if (!k.endsWith("_b64")) out.set(`tools.${part}.${camel(k)}`, v);
  }
  out.set("tools.callId.pos", lower(t.call_id.pos));
  out.set("tools.callId.prefix", t.call_id.prefix);
  out.set("tools.callId.suffix", t.call_id.suffix);
  out.set("preservedTokens", ref.preserved_tokens);
  out.set("additionalStops", ref.additional_stops);
  return out;
}

function flattenOurs(a: TemplateAnalysis): Flat {
  const out: Flat = new Map();
  const walk = (v: unknown, path: string) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(x, path === "" ? k : `${path}.${k}`);
    } else out.set(path, v);
  };
  const { templateHash: _h, corrections: _c, probeFailures: _p, ...compared } = a;
  walk(compared, "");
  return out;
}

interface Outcome {
  template: string;
  /** Differing field paths; ["error"] when exactly one side failed. */
  differs: string[];
  detail: string[];
  ours?: TemplateAnalysis;
  ourError?: string;
  refError?: string;
}

function compare(template: string, ours: TemplateAnalysis | Error, ref: { ok: boolean; result?: any; error?: string }): Outcome {
  const o: Outcome = { template, differs: [], detail: [] };
  if (ours instanceof Error) o.ourError = ours.message;
  else o.ours = ours;
  if (!ref.ok) o.refError = ref.error ?? "";
  if (ours instanceof Error || !ref.ok) {
    if ((ours instanceof Error) !== !ref.ok) {
      o.differs.push("error");
      o.detail.push(`ours: ${o.ourError ?? "ok"}; reference: ${o.refError ?? "ok"}`);
    }
    return o;
  }
  const a = flattenOurs(ours);
  const b = flattenReference(ref.result);
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    if (JSON.stringify(a.get(key)) !== JSON.stringify(b.get(key))) {
      o.differs.push(key);
      o.detail.push(`${key}: ours ${JSON.stringify(a.get(key))}, reference ${JSON.stringify(b.get(key))}`);
    }
  }
  return o;
}

let h: Harness;
const outcomes: Outcome[] = [];

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  if (process.env["LLAMAPEG_WRITE_ANALYSIS_DOCS"] === "1" && outcomes.length === templates.length) writeDocsTable();
});

async function check(name: string, dir: URL): Promise<Outcome> {
  const source = readFileSync(new URL(name, dir), "utf8");
  let ours: TemplateAnalysis | Error;
  try {
    ours = analyzeTemplate(source, { bosToken: BOS, eosToken: EOS });
  } catch (e) {
    ours = e as Error;
  }
  // chat.analyze parses the source it is given; the reference's apply path analyses the
  // template as common_chat_templates_init loaded it, with the load-time patches applied
  const ref = await h.request(
    "chat.analyze",
    { template: patchTemplateSource(source), bos_token: BOS, eos_token: EOS },
    { timeoutMs: 60_000 },
  );
  const o = compare(name, ours, ref);
  const known = baseline[name]?.differs ?? [];
  const unexpected = o.differs.filter((d) => !known.includes(d));
  const fixed = known.filter((d) => !o.differs.includes(d));
  if (fixed.length > 0) console.log(`${name}: no longer differs in ${fixed.join(", ")} (update the baseline)`);
  expect(unexpected, o.detail.join("\n")).toEqual([]);
  return o;
}

describe("template analysis matches the reference on every vendored template", () => {
  for (const name of templates) {
    it(name, async () => {
      outcomes.push(await check(name, templatesDir));
    });
  }
});

describe("template analysis matches the reference on the synthetic unit-test templates", () => {
  for (const name of fixtures) {
    it(name, async () => {
      await check(name, fixturesDir);
    });
  }
});

function cell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\n/g, "\\n");
}

function writeDocsTable(): void {
  outcomes.sort((x, y) => x.template.localeCompare(y.template));
  const rows = outcomes.map((o) => {
    const src = patchTemplateSource(readFileSync(new URL(o.template, templatesDir), "utf8"));
    const specialized = detectSpecializedTemplate(src) ?? "";
    const a = o.ours;
    const syntax = a ? a.tools.format.mode : "";
    const reasoning = a ? a.reasoning.mode : "";
    const corrections = a ? a.corrections.join(", ") : "";
    const failed = a ? [...new Set(a.probeFailures.map((f) => f.probe))].join(", ") : "";
    const status = o.differs.length === 0 ? (o.ourError ? "identical (both fail)" : "identical") : `differs: ${o.differs.join(", ")}`;
    const why = o.differs.length === 0 ? "" : (baseline[o.template]?.why ?? "(not in baseline)");
    return `| ${cell(o.template.replace(/\.jinja$/, ""))} | ${specialized} | ${syntax} | ${reasoning} | ${cell(corrections)} | ${cell(failed)} | ${cell(status)} | ${cell(why)} |`;
  });
  const identical = outcomes.filter((o) => o.differs.length === 0).length;
  const table = [
    `${identical} of ${outcomes.length} vendored templates: identical analysis (every field).`,
    "",
    "| template | specialized (apply path) | tool syntax | reasoning | corrections | probes the template rejects | parity | why |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
  spliceDocTable(fileURLToPath(docsPath), "parity-table", table);
}
