/**
 * applyChatTemplate vs llama.cpp's common_chat_templates_apply (harness `chat.templates_apply`) on
 * every vendored template x every conversation in test/fixtures/apply/conversations.json:
 * identical prompt, grammar, laziness, triggers, preserved tokens, stops, generation prompt; then,
 * for the text the template itself renders for the expected assistant message, the same parsed
 * message as the reference's `chat.parse`, whole and at every prefix (sampled for long outputs
 * unless LLAMAPEG_APPLY_FULL_SWEEP=1). Round trip: that text parses back to the expected message.
 *
 * Known differences (with the reason) live in test/fixtures/apply/parity-baseline.json: a new
 * difference fails, one that went away is reported. LLAMAPEG_WRITE_APPLY_DOCS=1 regenerates the
 * table in docs/apply.md and LLAMAPEG_WRITE_APPLY_BASELINE=1 the baseline (reasons kept).
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyChatTemplate, type AppliedChatPlan, type ApplyChatRequest } from "../../lib/chat/apply/index.js";
import { applyDeltas } from "../../lib/chat/diff.js";
import { emptyAssistantMessage } from "../../lib/chat/messages.js";
import { parseChatOutput } from "../../lib/chat/parse.js";
import { ChatSession } from "../../lib/chat/session.js";
import { detectSpecializedTemplate } from "../../lib/chat/families/registry.js";
import { LlamapegError } from "../../lib/errors.js";
import { spliceDocTable } from "../support/doc-table.js";
import { getHarness, type Harness } from "../support/harness.js";
import { BOS, EOS, FIXTURES, NOW, ROOT, TEMPLATES, conversations as loadConversations, ourRequest, referenceRequest, renderedOutput, templateFiles, type Conversation } from "./apply-outputs.js";
import { b64, canonicalGbnf, cutsCharacter, normOurs, normRef, treeGrammar, type NormMsg, type RefMsg } from "./chat-compare.js";

process.env.TZ = "UTC"; // the harness runs in UTC with a fixed clock

const FULL_SWEEP = process.env.LLAMAPEG_APPLY_FULL_SWEEP === "1";
/** Prefixes (partial parses) compared per output unless FULL_SWEEP: evenly spaced, plus the end. */
const SAMPLE = 24;

const FIELDS = ["prompt", "grammar", "grammarLazy", "grammarTriggers", "preservedTokens", "additionalStops", "generationPrompt", "thinking", "parse"] as const;
type Field = (typeof FIELDS)[number];

interface Outcome {
  /** Fields that differ, with a short description. */
  diffs: Partial<Record<Field, string>>;
  /** Both sides raised (the reference's and our message). */
  bothRaise?: string;
  /** Parse comparisons made (cuts), and the round trip. */
  parses: number;
  roundTrip: "ok" | "differs" | "no-output" | "n/a";
  roundTripNote?: string;
  /** ChatSession agrees with parseChatOutput ("n/a" when the complete parse throws). */
  streamed?: "same" | "differs" | "n/a";
  /** The whole output: our final parse rejects it or reads it otherwise, while our partial parse gives the reference's message. */
  strictComplete?: boolean;
}

interface Baseline {
  /** "template|conversation|field" -> why */
  [key: string]: string;
}

const templates = templateFiles();
const conversations = loadConversations();
const baselinePath = path.join(FIXTURES, "parity-baseline.json");
const baseline: Baseline = fs.existsSync(baselinePath) ? (JSON.parse(fs.readFileSync(baselinePath, "utf8")) as Baseline) : {};
const results = new Map<string, Map<string, Outcome>>();
const encoder = new TextEncoder();
const streamNotes: string[] = [];
let treeChecks = 0;
let h: Harness;

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  const s = summarize();
  console.log(`applyChatTemplate conformance: ${JSON.stringify(s)}; plan.grammar = the GBNF of plan.parser checked on ${treeChecks} plans`);
  if (process.env.LLAMAPEG_WRITE_APPLY_DOCS) writeDocs(s);
  if (process.env.LLAMAPEG_WRITE_APPLY_BASELINE) writeBaseline();
  // every outcome (round-trip notes included), for looking into the numbers
  if (process.env.LLAMAPEG_APPLY_DUMP) fs.writeFileSync(process.env.LLAMAPEG_APPLY_DUMP, JSON.stringify(Object.fromEntries([...results].map(([t, m]) => [t, Object.fromEntries(m)])), null, 1));
});

function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `at ${i}: reference ${JSON.stringify(a.slice(i, i + 50))} vs ours ${JSON.stringify(b.slice(i, i + 50))}`;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function cutsFor(bytes: Uint8Array): number[] {
  const all = [...Array(bytes.length).keys()].filter((c) => !cutsCharacter(bytes, c));
  if (FULL_SWEEP || all.length <= SAMPLE) return all;
  // evenly spaced cuts plus the last 6 bytes (where the closing markers sit)
  const step = all.length / (SAMPLE - 6);
  const picked = new Set<number>();
  for (let i = 0; i < SAMPLE - 6; i++) picked.add(all[Math.floor(i * step)]!);
  for (const c of all.slice(-6)) picked.add(c);
  return [...picked].sort((a, b) => a - b);
}

/**
 * The session's final message must be our final parse, or (where our final parse rejects
 * an output otherwise, e.g. a reasoning block that never closes) the reference's lenient one.
 */
function streamsLikeParse(plan: AppliedChatPlan, bytes: Uint8Array, reference: NormMsg | null): "same" | "differs" | "n/a" {
  let whole: NormMsg;
  try {
    whole = normOurs(parseChatOutput(plan, bytes));
  } catch {
    return "n/a";
  }
  const session = new ChatSession(plan, { generateToolCallId: () => "" });
  const sum = emptyAssistantMessage();
  for (let i = 0; i < bytes.length; i += 7) applyDeltas(sum, session.feed(bytes.subarray(i, i + 7)).deltas);
  const last = session.finish();
  applyDeltas(sum, last.deltas);
  const final = dropIds(normOurs(last.message));
  const expected = (m: NormMsg | null) => m !== null && sameJson(final, dropIds(m));
  if ((expected(whole) || expected(reference)) && sameJson(dropIds(normOurs(sum)), final)) return "same";
  streamNotes.push(`parse ${JSON.stringify(whole).slice(0, 200)} | session ${JSON.stringify(final).slice(0, 200)} | deltas ${JSON.stringify(normOurs(sum)).slice(0, 200)} | events ${JSON.stringify(last.events).slice(0, 200)}`);
  return "differs";
}

function expectedNorm(conv: Conversation): NormMsg {
  const e = conv.expected;
  return normOurs({
    role: "assistant",
    content: e.content ?? "",
    reasoning_content: e.reasoning_content ?? "",
    tool_calls: (e.tool_calls ?? []).map((c) => ({ id: "", type: "function", function: { name: c.function.name, arguments: c.function.arguments } })),
  } as never);
}

function dropIds(m: NormMsg): NormMsg {
  return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: "" })) };
}

async function compareOne(source: string, conv: Conversation): Promise<Outcome> {
  const out: Outcome = { diffs: {}, parses: 0, roundTrip: "n/a" };
  const ref = await h.request<any>("chat.templates_apply", { template: source, bos_token: BOS, eos_token: EOS, request: referenceRequest(conv, conv.messages, true) });
  let ours: AppliedChatPlan | LlamapegError;
  try {
    ours = applyChatTemplate(source, ourRequest(conv));
  } catch (e) {
    if (!(e instanceof LlamapegError)) throw e;
    ours = e;
  }
  if (!ref.ok || ours instanceof LlamapegError) {
    if (!ref.ok && ours instanceof LlamapegError) out.bothRaise = `reference: ${String(ref.error).slice(0, 100)}; ours: ${ours.code} ${ours.message.slice(0, 100)}`;
    else out.diffs.prompt = ref.ok ? `we raise: ${(ours as LlamapegError).message.slice(0, 120)}` : `the reference raises: ${String(ref.error).slice(0, 120)}`;
    return out;
  }
  // One tree: the plan's grammar is exactly what its parser's arena exports.
  const schemas = [...(conv.tools ?? []).map((t) => (t as { function: { parameters?: unknown } }).function.parameters ?? {}), ...(conv.response_format ? [conv.response_format.json_schema.schema] : [])];
  const fromTree = treeGrammar(ours, schemas);
  if (fromTree !== null && fromTree !== ours.grammar?.gbnf) throw new Error(`${conv.name}: plan.grammar is not the GBNF of plan.parser`);
  treeChecks++;
  const r = ref.result;
  if (r.prompt !== ours.prompt) out.diffs.prompt = firstDifference(r.prompt, ours.prompt);
  const refGrammar = canonicalGbnf(r.grammar);
  const ourGrammar = canonicalGbnf(ours.grammar?.gbnf ?? "");
  if (refGrammar !== ourGrammar) out.diffs.grammar = firstDifference(refGrammar, ourGrammar);
  const ourLazy = ours.grammar?.lazy ?? false;
  if (r.grammar_lazy !== ourLazy) out.diffs.grammarLazy = `reference ${r.grammar_lazy}, ours ${ourLazy}`;
  const refTriggers = (r.grammar_triggers as { type: string; value: string }[]).map((t) => ({ type: t.type, value: t.value }));
  const ourTriggers = (ours.grammar?.triggers ?? []).map((t) => ({ type: t.type, value: t.value }));
  if (!sameJson(refTriggers, ourTriggers)) out.diffs.grammarTriggers = `reference ${JSON.stringify(refTriggers)}, ours ${JSON.stringify(ourTriggers)}`;
  if (!sameJson(r.preserved_tokens, ours.preservedTokens)) out.diffs.preservedTokens = `reference ${JSON.stringify(r.preserved_tokens)}, ours ${JSON.stringify(ours.preservedTokens)}`;
  if (!sameJson(r.additional_stops, ours.additionalStops)) out.diffs.additionalStops = `reference ${JSON.stringify(r.additional_stops)}, ours ${JSON.stringify(ours.additionalStops)}`;
  if (r.generation_prompt !== ours.generationPrompt) out.diffs.generationPrompt = firstDifference(r.generation_prompt, ours.generationPrompt);
  const refThinking = { start: r.thinking_start_tag, ends: r.thinking_end_tags };
  const ourThinking = { start: ours.thinkingStartTag, ends: ours.thinkingEndTags };
  if (!sameJson(refThinking, ourThinking)) out.diffs.thinking = `reference ${JSON.stringify(refThinking)}, ours ${JSON.stringify(ourThinking)}`;

  // Parse: the template's own rendering of the expected message, whole and cut.
  const text = await renderedOutput(h, source, conv, r.generation_prompt, r.thinking_start_tag);
  if (text === null || text === "") {
    out.roundTrip = "no-output";
    return out;
  }
  const bytes = encoder.encode(text);
  const params = { format: r.format, generation_prompt: r.generation_prompt, parser_text: r.parser_text };
  const cuts = cutsFor(bytes);
  const refs = await Promise.all(
    cuts.map((cut) => h.request<{ msg: RefMsg }>("chat.parse", { params, text_b64: b64(bytes.subarray(0, cut)), partial: true })),
  );
  // the whole text, parsed as complete, by both
  const refWhole = await h.request<{ msg: RefMsg }>("chat.parse", { params, text_b64: b64(bytes), partial: false });
  const compareAt = (cut: number, partial: boolean, refAt: { ok: boolean; result?: { msg: RefMsg }; error?: string }): string | null => {
    out.parses++;
    let mine: NormMsg | null = null;
    try {
      mine = normOurs(parseChatOutput(ours as AppliedChatPlan, bytes.subarray(0, cut), { partial }));
    } catch (e) {
      if (!(e instanceof LlamapegError)) throw e;
    }
    if (!refAt.ok && mine === null) return null;
    if (!refAt.ok) return `cut ${cut}${partial ? "" : " (complete)"}: the reference rejects (${String(refAt.error).slice(0, 80)}), we accept`;
    if (mine === null) return `cut ${cut}${partial ? "" : " (complete)"}: we reject, the reference accepts`;
    const theirs = normRef(refAt.result!.msg);
    return sameJson(mine, theirs) ? null : `cut ${cut}${partial ? "" : " (complete)"}: reference ${JSON.stringify(theirs).slice(0, 150)} vs ours ${JSON.stringify(mine).slice(0, 150)}`;
  };
  let parseDiff: string | null = null;
  cuts.forEach((cut, i) => {
    const d = compareAt(cut, true, refs[i]!);
    if (d !== null && parseDiff === null) parseDiff = d;
  });
  // Where only the final parse differs (we reject as finished, a required call missing, and as
  // partial give the reference's message), it is counted apart.
  let whole = compareAt(bytes.length, false, refWhole);
  if (whole !== null && compareAt(bytes.length, true, refWhole) === null) {
    out.strictComplete = true;
    whole = null;
  }
  if (whole !== null && parseDiff === null) parseDiff = whole;
  if (parseDiff !== null) out.diffs.parse = `${JSON.stringify(text.slice(0, 80))}: ${parseDiff}`;

  // Streaming: a ChatSession over the plan, fed in 7-byte pieces, ends on our complete parse, and its
  // deltas add up to its final message.
  out.streamed = streamsLikeParse(ours, bytes, refWhole.ok ? normRef(refWhole.result!.msg) : null);

  // Round trip: our complete parse gives back the expected message (ids aside).
  try {
    const back = dropIds(normOurs(parseChatOutput(ours, bytes)));
    const want = expectedNorm(conv);
    out.roundTrip = sameJson(back, want) ? "ok" : "differs";
    if (out.roundTrip === "differs") out.roundTripNote = `${JSON.stringify(text.slice(0, 60))} -> ${JSON.stringify(back)}`;
  } catch (e) {
    out.roundTrip = "differs";
    out.roundTripNote = `${JSON.stringify(text.slice(0, 60))}: ${(e as Error).message.slice(0, 100)}`;
  }
  return out;
}

describe("applyChatTemplate vs common_chat_templates_apply", () => {
  for (const file of templates) {
    const name = file.replace(/\.jinja$/, "");
    it(name, async () => {
      const source = fs.readFileSync(path.join(TEMPLATES, file), "utf8");
      const perConv = new Map<string, Outcome>();
      results.set(name, perConv);
      const unexpected: string[] = [];
      for (const conv of conversations) {
        const o = await compareOne(source, conv);
        perConv.set(conv.name, o);
        for (const [field, why] of Object.entries(o.diffs)) {
          if (baseline[`${name}|${conv.name}|${field}`] === undefined) unexpected.push(`${conv.name} ${field}: ${why}`);
        }
        if (o.streamed === "differs" && baseline[`${name}|${conv.name}|stream`] === undefined) unexpected.push(`${conv.name}: ChatSession's final message or its deltas differ from parseChatOutput: ${streamNotes.at(-1)}`);
      }
      expect(unexpected, `${name}: differences not in the baseline`).toEqual([]);
    }, 120_000);
  }
});

interface Summary {
  templates: number;
  conversations: number;
  cases: number;
  identical: number;
  bothRaise: number;
  byField: Record<string, number>;
  parses: number;
  roundTrip: Record<string, number>;
  strictComplete: number;
  streamed: Record<string, number>;
  fullSweep: boolean;
}

function summarize(): Summary {
  const byField: Record<string, number> = Object.fromEntries(FIELDS.map((f) => [f, 0]));
  const roundTrip: Record<string, number> = { ok: 0, differs: 0, "no-output": 0, "n/a": 0 };
  let cases = 0;
  let identical = 0;
  let bothRaise = 0;
  let parses = 0;
  let strictComplete = 0;
  const streamed: Record<string, number> = { same: 0, differs: 0, "n/a": 0 };
  for (const per of results.values()) {
    for (const o of per.values()) {
      cases++;
      if (o.streamed !== undefined) streamed[o.streamed]!++;
      if (o.strictComplete) strictComplete++;
      if (o.bothRaise !== undefined) bothRaise++;
      const fields = Object.keys(o.diffs) as Field[];
      if (fields.length === 0) identical++;
      for (const f of FIELDS) if (o.diffs[f] === undefined) byField[f]!++;
      parses += o.parses;
      roundTrip[o.roundTrip]!++;
    }
  }
  return { templates: results.size, conversations: conversations.length, cases, identical, bothRaise, byField, parses, roundTrip, strictComplete, streamed, fullSweep: FULL_SWEEP };
}

/** A first reason for a new difference; a person edits the baseline afterwards. */
function explain(_name: string, field: string, why: string): string {
  return `TODO: explain (${field}: ${why.slice(0, 160)})`;
}

function writeBaseline(): void {
  const out: Baseline = {};
  for (const [name, per] of results) {
    for (const [conv, o] of per) {
      for (const [field, why] of Object.entries(o.diffs)) {
        const key = `${name}|${conv}|${field}`;
        out[key] = baseline[key] ?? explain(name, field, why);
      }
      if (o.streamed === "differs") {
        const key = `${name}|${conv}|stream`;
        out[key] = baseline[key] ?? "TODO: explain (ChatSession and parseChatOutput disagree)";
      }
    }
  }
  fs.writeFileSync(baselinePath, `${JSON.stringify(out, null, 1)}\n`);
}

function writeDocs(s: Summary): void {
  const docPath = path.join(ROOT, "docs/apply.md");
  const lines: string[] = [];
  lines.push(
    `${s.identical} of ${s.cases} template x conversation cases identical in every field (${s.templates} templates x ${s.conversations} conversations; ${s.bothRaise} where both raise count as identical).`,
    "",
    `By field (cases identical / ${s.cases}): ${FIELDS.map((f) => `${f} ${s.byField[f]}`).join(", ")}.`,
    "",
    `Parses compared: ${s.parses} (${s.fullSweep ? "every prefix" : `${SAMPLE} prefixes per output (evenly spaced + the last 6 bytes)`}). Round trip (the template's rendering of the expected message parses back to it): ${s.roundTrip.ok} ok, ${s.roundTrip.differs} differ, ${s.roundTrip["no-output"]} where the template's rendering of the reply does not continue the generation prompt (or it raises). Whole outputs our final parse rejects while the reference's accepts (same message as our partial parse; all under tool_choice required, where the template's rendering of the reply holds no call the format's parser finds: a parse error for us, an answer for the reference): ${s.strictComplete}. ChatSession fed the same outputs in 7-byte pieces ends on parseChatOutput's message with deltas that add up to it: ${s.streamed.same} of ${s.streamed.same + s.streamed.differs} (${s.streamed["n/a"]} outputs our complete parse rejects).`,
    "",
    "| template | specialized | identical | differs (conversation: fields) | round trip ok | rejected as finished | why |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  );
  for (const [name, per] of results) {
    const source = fs.readFileSync(path.join(TEMPLATES, `${name}.jinja`), "utf8");
    let same = 0;
    let rt = 0;
    const strict: string[] = [];
    const differs: string[] = [];
    const whys = new Set<string>();
    for (const [conv, o] of per) {
      const fields = Object.keys(o.diffs);
      if (fields.length === 0) same++;
      else {
        differs.push(`${conv}: ${fields.join(", ")}`);
        for (const f of fields) whys.add(baseline[`${name}|${conv}|${f}`] ?? "new");
      }
      if (o.roundTrip === "ok") rt++;
      if (o.strictComplete) strict.push(conv);
    }
    lines.push(`| ${name} | ${detectSpecializedTemplate(source) ?? ""} | ${same}/${per.size} | ${differs.join("; ")} | ${rt}/${per.size} | ${strict.join(", ")} | ${[...whys].join("; ").replace(/\|/g, "\\|")} |`);
  }
  spliceDocTable(docPath, "apply-table", lines.join("\n"));
}

/**
 * Bad templates (fixtures): the reference and we must agree on failing or not; where both fail, ours
 * is a LlamapegError with the category named; a template that cannot render tool calls given tools
 * is a content-only plan on both sides.
 */
describe("applyChatTemplate vs the reference on bad templates", () => {
  const user = [{ role: "user", content: "a forbidden word" }];
  const tools = conversations.find((c) => c.name === "tool-call")!.tools!;
  const cases: { name: string; file: string; request: Record<string, unknown>; code?: string }[] = [
    { name: "syntax error", file: "syntax-error.jinja", request: { messages: user }, code: "ERR_TEMPLATE_RENDER" },
    { name: "raise_exception", file: "raises.jinja", request: { messages: user }, code: "ERR_TEMPLATE_RENDER" },
    { name: "no tool support, tools given", file: "plain-chatml.jinja", request: { messages: user, tools, tool_choice: "auto" } },
    { name: "no tool support, tool_choice required", file: "plain-chatml.jinja", request: { messages: user, tools, tool_choice: "required" } },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const source = fs.readFileSync(path.join(FIXTURES, c.file), "utf8");
      const ref = await h.request<any>("chat.templates_apply", { template: source, request: { ...c.request, reasoning_format: "auto", now: NOW } });
      let ours: AppliedChatPlan | LlamapegError;
      try {
        ours = applyChatTemplate(source, { ...(c.request as unknown as ApplyChatRequest), reasoning_format: "auto", now: new Date(NOW), reference_mode: true });
      } catch (e) {
        expect(e).toBeInstanceOf(LlamapegError);
        ours = e as LlamapegError;
      }
      expect(ours instanceof LlamapegError, `reference ${ref.ok ? "succeeds" : `fails: ${ref.error}`}`).toBe(!ref.ok);
      if (ours instanceof LlamapegError) {
        expect(ours.code).toBe(c.code);
        return;
      }
      expect(ours.prompt).toBe(ref.result.prompt);
      expect(canonicalGbnf(ours.grammar?.gbnf ?? "")).toBe(canonicalGbnf(ref.result.grammar));
      expect(ours.grammar?.triggers ?? []).toEqual(ref.result.grammar_triggers);
      // the call text stays content on both sides
      const text = '<tool_call>{"name": "get_current_weather"}</tool_call>';
      const refMsg = await h.call<{ msg: RefMsg }>("chat.parse", { params: { format: ref.result.format, generation_prompt: ref.result.generation_prompt, parser_text: ref.result.parser_text }, text });
      expect(normOurs(parseChatOutput(ours, text))).toEqual(normRef(refMsg.msg));
    });
  }
});
