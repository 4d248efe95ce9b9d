/**
 * Final messages: `ChatSession.finish()` vs the reference's parse of a finished output
 * (`common_chat_peg_parse`, harness `chat.parse_cuts` with partial = false), on outputs the
 * reference writes itself: for every vendored template x every conversation of
 * test/fixtures/apply/conversations.json, the template's own rendering of the expected reply, and
 * from it
 * - "cut": that output cut at every byte (UTF-8 character boundaries), as max_tokens cuts it: the
 *   cuts land inside every kind of block the output has (reasoning, content, calls), counted
 *   apart by the block the reference's partial parse is in at the cut;
 * - "unknown-tool": the reply's calls renamed to a tool the request does not offer;
 * - "broken-json": the reply's arguments with their closing brace dropped (templates that render
 *   arguments as text);
 * - "other-syntax": the reply as another template writes it (Qwen 2.5's, or Mistral's for Qwen 2.5);
 * - "empty": no output at all.
 * Where the reference returns a message, ours must be the same (ids aside); the goal is >= 99.5%.
 * Where it throws, ours never puts the generation prompt into the content. Remaining differences are
 * in test/fixtures/apply/final-baseline.json, counted per template, conversation and category, each
 * with its reason: more differences than the baseline allows fail the test, fewer are reported.
 * LLAMAPEG_WRITE_FINAL_BASELINE=1 rewrites the baseline (reasons kept), LLAMAPEG_WRITE_FINAL_DOCS=1
 * the table in docs/apply.md.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { applyChatTemplate, type AppliedChatPlan } from "../../lib/chat/apply/index.js";
import { ChatSession } from "../../lib/chat/session.js";
import { LlamapegError } from "../../lib/errors.js";
import { spliceDocTable } from "../support/doc-table.js";
import { getHarness, type Harness } from "../support/harness.js";
import { BOS, EOS, FIXTURES, ROOT, conversations as loadConversations, ourRequest, readTemplate, referenceRequest, renderedOutput, templateFiles, type Conversation } from "./apply-outputs.js";
import { b64, cutsCharacter, normOurs, normRef, type NormMsg, type RefMsg } from "./chat-compare.js";

process.env.TZ = "UTC";

const CATEGORIES = ["cut-reasoning", "cut-content", "cut-call", "cut-other", "whole", "unknown-tool", "broken-json", "other-syntax", "empty"] as const;
type Category = (typeof CATEGORIES)[number];
const OTHER = { default: "Qwen-Qwen2.5-7B-Instruct.jinja", forQwen: "Mistral-Small-3.2-24B-Instruct-2506.jinja" };

interface Tally {
  outputs: number;
  refOk: number;
  same: number;
  /** The reference throws; ours keeps the generation prompt out of the content. */
  refThrows: number;
  /** template|conversation -> differing outputs, with the first one shown */
  differ: Map<string, { count: number; example: string }>;
}

const tallies = new Map<Category, Tally>(CATEGORIES.map((c) => [c, { outputs: 0, refOk: 0, same: 0, refThrows: 0, differ: new Map() }]));
const baselinePath = path.join(FIXTURES, "final-baseline.json");
type Baseline = Record<string, { count: number; why: string }>;
const baseline: Baseline = fs.existsSync(baselinePath) ? (JSON.parse(fs.readFileSync(baselinePath, "utf8")) as Baseline) : {};
const encoder = new TextEncoder();
const decoder = new TextDecoder();
let h: Harness;

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  const rows = CATEGORIES.map((c) => {
    const t = tallies.get(c)!;
    return `${c} ${t.same}/${t.refOk} (+${t.refThrows} the reference rejects, of ${t.outputs})`;
  });
  const all = [...tallies.values()].reduce((a, t) => ({ same: a.same + t.same, refOk: a.refOk + t.refOk }), { same: 0, refOk: 0 });
  console.log(`final-message conformance: ${all.same}/${all.refOk} = ${((100 * all.same) / Math.max(1, all.refOk)).toFixed(3)}% equal the reference; ${rows.join("; ")}`);
  if (process.env.LLAMAPEG_WRITE_FINAL_BASELINE) writeBaseline();
  if (process.env.LLAMAPEG_WRITE_FINAL_DOCS) writeDocs(all);
});

/**
 * Each kept cut, with the block it is in: the field the reference's partial parse grows next
 * (markup counts to the block it opens), "cut-other" when nothing grows after it.
 */
function classifyCuts(bytes: Uint8Array, partials: { ok: boolean; msg?: RefMsg }[]): { cut: number; category: Category }[] {
  const key = (m: { ok: boolean; msg?: RefMsg } | undefined): string => (m?.ok ? JSON.stringify(m.msg) : "fail");
  const grows = (a: RefMsg, b: RefMsg): Category => {
    if (JSON.stringify(b.tool_calls) !== JSON.stringify(a.tool_calls)) return "cut-call";
    if (b.reasoning_content !== a.reasoning_content) return "cut-reasoning";
    if (b.content !== a.content) return "cut-content";
    return "cut-other";
  };
  // the block of each cut, filled backwards from the next change
  const category: Category[] = new Array(bytes.length + 1).fill("cut-other");
  let next: Category = "cut-other";
  for (let cut = bytes.length - 1; cut >= 0; cut--) {
    const a = partials[cut];
    const b = partials[cut + 1];
    if (key(a) !== key(b)) next = a?.ok && b?.ok ? grows(a.msg!, b.msg!) : "cut-other";
    category[cut] = next;
  }
  const out: { cut: number; category: Category }[] = [];
  for (let cut = 0; cut < bytes.length; cut++) if (!cutsCharacter(bytes, cut)) out.push({ cut, category: category[cut]! });
  return out;
}

/** Our final message for `bytes`: a session fed the output in one piece, then finished. */
function ours(plan: AppliedChatPlan, bytes: Uint8Array, truncated: boolean): NormMsg {
  const session = new ChatSession(plan, { generateToolCallId: () => "" });
  if (bytes.length > 0) session.feed(bytes);
  return normOurs(session.finish(undefined, undefined, { truncated }).message);
}

const dropIds = (m: NormMsg): NormMsg => ({ ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: "" })) });

function record(category: Category, key: string, plan: AppliedChatPlan, text: Uint8Array, ref: { ok: boolean; msg?: RefMsg }, mine: NormMsg): void {
  const t = tallies.get(category)!;
  t.outputs++;
  if (!ref.ok) {
    t.refThrows++;
    const gp = plan.generationPrompt.trim();
    if (gp !== "" && mine.content.startsWith(gp)) throw new Error(`${key} ${category}: the generation prompt ${JSON.stringify(gp)} ended up in the content: ${JSON.stringify(mine.content.slice(0, 120))}`);
    return;
  }
  t.refOk++;
  const theirs = dropIds(normRef(ref.msg!));
  if (JSON.stringify(theirs) === JSON.stringify(dropIds(mine))) {
    t.same++;
    return;
  }
  const d = t.differ.get(key) ?? { count: 0, example: "" };
  if (d.count === 0) d.example = `${JSON.stringify(decoder.decode(text).slice(-60))}: reference ${JSON.stringify(theirs).slice(0, 160)} vs ours ${JSON.stringify(mine).slice(0, 160)}`;
  d.count++;
  t.differ.set(key, d);
}

async function refParse(params: unknown, bytes: Uint8Array, cuts: number[] | undefined, partial: boolean): Promise<{ ok: boolean; msg?: RefMsg }[]> {
  return h.call<{ ok: boolean; msg?: RefMsg }[]>("chat.parse_cuts", { params, text_b64: b64(bytes), ...(cuts !== undefined ? { cuts } : {}), partial }, { timeoutMs: 120_000 });
}

interface Prepared {
  source: string;
  conv: Conversation;
  plan: AppliedChatPlan;
  params: { format: string; generation_prompt: string; parser_text: string };
  generationPrompt: string;
  thinkingStart: string;
}

async function prepare(source: string, conv: Conversation): Promise<Prepared | null> {
  const ref = await h.request<any>("chat.templates_apply", { template: source, bos_token: BOS, eos_token: EOS, request: referenceRequest(conv, conv.messages, true) });
  if (!ref.ok) return null;
  let plan: AppliedChatPlan;
  try {
    plan = applyChatTemplate(source, ourRequest(conv));
  } catch (e) {
    if (e instanceof LlamapegError) return null;
    throw e;
  }
  const r = ref.result;
  return { source, conv, plan, params: { format: r.format, generation_prompt: r.generation_prompt, parser_text: r.parser_text }, generationPrompt: r.generation_prompt, thinkingStart: r.thinking_start_tag };
}

/** The expected reply with its calls changed by `f`. */
function replyWith(conv: Conversation, f: (call: { function: { name: string; arguments: string } }) => { function: { name: string; arguments: string } }): Record<string, unknown> {
  return { ...conv.expected, tool_calls: (conv.expected.tool_calls ?? []).map((c) => ({ ...c, ...f(c) })) };
}

async function whole(p: Prepared, key: string, category: Category, text: string | null): Promise<void> {
  if (text === null) return;
  const bytes = encoder.encode(text);
  const [ref] = await refParse(p.params, bytes, [bytes.length], false);
  record(category, key, p.plan, bytes, ref!, ours(p.plan, bytes, false));
}

async function compareTemplate(file: string, otherOutputs: Map<string, string | null>): Promise<void> {
  const source = readTemplate(file);
  const name = file.replace(/\.jinja$/, "");
  for (const conv of loadConversations()) {
    const p = await prepare(source, conv);
    if (p === null) continue;
    const key = `${name}|${conv.name}`;
    const text = await renderedOutput(h, source, conv, p.generationPrompt, p.thinkingStart);
    if (text !== null && text !== "") {
      const bytes = encoder.encode(text);
      // every cut, finished; and the partial parse at every cut, to tell which block it is in
      const [finished, partials] = await Promise.all([refParse(p.params, bytes, undefined, false), refParse(p.params, bytes, undefined, true)]);
      for (const { cut, category } of classifyCuts(bytes, partials)) {
        const prefix = bytes.subarray(0, cut);
        record(category, key, p.plan, prefix, finished[cut]!, ours(p.plan, prefix, true));
      }
      record("whole", key, p.plan, bytes, finished[bytes.length]!, ours(p.plan, bytes, false));
    }
    if ((conv.expected.tool_calls?.length ?? 0) > 0) {
      await whole(p, key, "unknown-tool", await renderedOutput(h, source, conv, p.generationPrompt, p.thinkingStart, replyWith(conv, (c) => ({ function: { ...c.function, name: "unknown_tool" } }))));
      await whole(p, key, "broken-json", await renderedOutput(h, source, conv, p.generationPrompt, p.thinkingStart, replyWith(conv, (c) => ({ function: { ...c.function, arguments: c.function.arguments.replace(/}\s*$/, "") } }))));
    }
    const other = otherOutputs.get(conv.name);
    if (other !== undefined && other !== null && other !== text) await whole(p, key, "other-syntax", other);
    await whole(p, key, "empty", "");
  }
}

/** A conversation's output as the "other" template writes it. */
async function outputsOf(file: string): Promise<Map<string, string | null>> {
  const source = readTemplate(file);
  const out = new Map<string, string | null>();
  for (const conv of loadConversations()) {
    const p = await prepare(source, conv);
    out.set(conv.name, p === null ? null : await renderedOutput(h, source, conv, p.generationPrompt, p.thinkingStart));
  }
  return out;
}

describe("final messages vs the reference's finished-output parse", () => {
  const others = new Map<string, Map<string, string | null>>();
  for (const file of templateFiles()) {
    it(file.replace(/\.jinja$/, ""), async () => {
      const otherFile = file === OTHER.default ? OTHER.forQwen : OTHER.default;
      if (!others.has(otherFile)) others.set(otherFile, await outputsOf(otherFile));
      await compareTemplate(file, others.get(otherFile)!);
      const name = file.replace(/\.jinja$/, "");
      const unexpected: string[] = [];
      for (const [category, t] of tallies) {
        for (const [key, d] of t.differ) {
          if (!key.startsWith(`${name}|`)) continue;
          const allowed = baseline[`${key}|${category}`]?.count ?? 0;
          if (d.count > allowed) unexpected.push(`${key} ${category}: ${d.count} differ (baseline ${allowed}); first: ${d.example}`);
        }
      }
      expect(unexpected, `${name}: final messages that differ from the reference beyond the baseline`).toEqual([]);
    }, 600_000);
  }

  it("equals the reference on at least 99.5% of the outputs it parses", () => {
    const all = [...tallies.values()].reduce((a, t) => ({ same: a.same + t.same, refOk: a.refOk + t.refOk }), { same: 0, refOk: 0 });
    expect(all.refOk).toBeGreaterThan(1000);
    expect(all.same / all.refOk).toBeGreaterThanOrEqual(0.995);
  });
});

function writeBaseline(): void {
  const out: Baseline = {};
  for (const [category, t] of tallies) {
    for (const [key, d] of t.differ) {
      const k = `${key}|${category}`;
      out[k] = { count: d.count, why: baseline[k]?.why ?? `TODO: explain (${d.example.slice(0, 200)})` };
    }
  }
  const sorted = Object.fromEntries(Object.keys(out).sort().map((k) => [k, out[k]!]));
  fs.writeFileSync(baselinePath, `${JSON.stringify(sorted, null, 1)}\n`);
}

function writeDocs(all: { same: number; refOk: number }): void {
  const docPath = path.join(ROOT, "docs/apply.md");
  const lines = [
    `${all.same} of ${all.refOk} finished outputs the reference parses give the reference's message (${((100 * all.same) / Math.max(1, all.refOk)).toFixed(3)}%).`,
    "",
    "| category | same / reference parses | the reference rejects | outputs |",
    "| --- | --- | --- | --- |",
    ...CATEGORIES.map((c) => {
      const t = tallies.get(c)!;
      return `| ${c} | ${t.same} / ${t.refOk} | ${t.refThrows} | ${t.outputs} |`;
    }),
    "",
    "| template \\| conversation \\| category | differing | why ours |",
    "| --- | --- | --- |",
    ...Object.entries(baseline)
      .sort()
      .map(([k, v]) => `| ${k.replace(/\|/g, " \\| ")} | ${v.count} | ${v.why.replace(/\|/g, "\\|")} |`),
  ];
  spliceDocTable(docPath, "final-table", lines.join("\n"));
}
