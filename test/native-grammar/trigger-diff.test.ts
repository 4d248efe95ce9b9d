/**
 * Lazy grammars against llama.cpp's lazy grammar (llama_grammar_init_impl with triggers, std::regex):
 * over random outputs built around the triggers of every vendored template's plans, the grammar
 * starts at the same token, and from there admits the same tokens (compared along a random path
 * the grammar admits); accepts fail at the same token when the text after a trigger does not fit.
 * Then the trigger matcher alone against std::regex (llama.cpp's `find`) on random patterns of the
 * supported subset, fed in random pieces.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { escapeRegex } from "../../lib/llama/generate-options.js";
import { TRIGGER_SNIPPETS, chatPlanGrammars } from "./corpus.js";
import { type DiffResult, GrammarProgram, vocabPath } from "./program.js";

const FULL = process.env.LLAMAPEG_GRAMMAR_FULL === "1";

let program: GrammarProgram;

beforeAll(async () => {
  program = await GrammarProgram.start();
}, 600_000);

afterAll(async () => {
  await program?.close();
});

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILLER = ["Hello", " world", "\n", "  ", "to", "=", "functions", "assistant", "<", "|", ">", "<|", "|>", "{", "\"", "é", "日本", "😀", " the", "call", "<tool", "tool_call", "</", "[", "]", "TOOL", ">>>", "\t"];

/** Random outputs: filler, pieces and near-misses of the triggers, and the triggers themselves. */
function outputsFor(patterns: string[], seed: number, count: number): string[] {
  const r = rng(seed);
  const words = patterns.filter((p) => escapeRegex(p.replace(/\\(.)/g, "$1")) === p).map((p) => p.replace(/\\(.)/g, "$1"));
  const pieces = [...FILLER, ...TRIGGER_SNIPPETS, ...words];
  for (const w of words) {
    const chars = Array.from(w); // by code point: no lone surrogates
    pieces.push(chars.slice(0, Math.max(1, chars.length - 1)).join(""), chars.slice(1).join(""), w.toUpperCase());
  }
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let text = "";
    const n = 1 + Math.floor(r() * 12);
    for (let k = 0; k < n; k++) text += pieces[Math.floor(r() * pieces.length)]!;
    // most outputs contain a real trigger somewhere
    if (words.length > 0 && r() < 0.6) {
      const chars = Array.from(text); // insert between code points: no lone surrogates
      const at = Math.floor(r() * (chars.length + 1));
      text = chars.slice(0, at).join("") + words[Math.floor(r() * words.length)]! + chars.slice(at).join("");
    }
    out.push(text);
  }
  return out;
}

describe("lazy grammars = llama.cpp's lazy grammar", () => {
  it("every vendored template's triggers, over random outputs, on Qwen 2", async () => {
    const lazy = chatPlanGrammars().filter((g) => g.lazy && g.patterns && g.patterns.length > 0);
    expect(lazy.length).toBeGreaterThan(10);
    let texts = 0,
      triggered = 0,
      states = 0;
    for (const [i, g] of lazy.entries()) {
      const outputs = outputsFor(g.patterns!, 1000 + i, FULL ? 60 : 16);
      const r = await program.call<DiffResult>("trigger.diff", {
        path: vocabPath("qwen2"),
        gbnf: g.gbnf,
        patterns: g.patterns,
        texts: outputs,
        seed: i,
        checkSteps: FULL ? 6 : 2,
      });
      expect(r.invalid, g.name).toBeUndefined();
      const found = { trigger: r.triggerMismatches, mask: r.maskMismatches, stacks: r.stackMismatches, accept: r.acceptMismatches, admits: r.admitsMismatches };
      expect(found, `${g.name}: ${JSON.stringify(r.mismatches[0] ?? null).slice(0, 1500)}`).toEqual({ trigger: 0, mask: 0, stacks: 0, accept: 0, admits: 0 });
      texts += outputs.length;
      triggered += r.triggered!;
      states += r.states;
    }
    console.log(`lazy plans: ${lazy.length}, outputs ${texts}, triggered ${triggered}, states compared ${states}`);
    expect(triggered).toBeGreaterThan(texts / 3);
  }, 1_800_000);

  it("token triggers and patterns with capture groups, on Llama 3's vocabulary", async () => {
    const r = await program.call<DiffResult>("trigger.diff", {
      path: vocabPath("llama-bpe"),
      gbnf: 'root ::= "call " [a-z]+ "(" [0-9]* ")"',
      patterns: ["[\\s\\S]*?(call [a-z])", "^x(y)?(call)"],
      tokens: [128000, 128006],
      texts: ["hello call foo(12)", "xcall bar(", "yy<|start_header_id|>call x()", "nothing here", "say call", "xycall q(1)"],
      checkSteps: 4,
    });
    expect(r.invalid).toBeUndefined();
    expect({ trigger: r.triggerMismatches, mask: r.maskMismatches, accept: r.acceptMismatches }).toEqual({ trigger: 0, mask: 0, accept: 0 });
    expect(r.triggered).toBeGreaterThan(2);
  }, 600_000);

  it("one lazy state reset between outputs (the addon's grammar pool) = a fresh llama.cpp grammar each time", async () => {
    const lazy = chatPlanGrammars().filter((g) => g.lazy && g.patterns && g.patterns.length > 0);
    let texts = 0,
      triggered = 0;
    for (const [i, g] of lazy.entries()) {
      if (i % 3 !== 0) continue;
      const outputs = outputsFor(g.patterns!, 3000 + i, 12);
      const r = await program.call<DiffResult>("trigger.diff", { path: vocabPath("qwen2"), gbnf: g.gbnf, patterns: g.patterns, texts: outputs, seed: i, checkSteps: 2, reuse: true });
      expect(r.invalid, g.name).toBeUndefined();
      const found = { trigger: r.triggerMismatches, mask: r.maskMismatches, stacks: r.stackMismatches, accept: r.acceptMismatches, admits: r.admitsMismatches };
      expect(found, `${g.name}: ${JSON.stringify(r.mismatches[0] ?? null).slice(0, 1500)}`).toEqual({ trigger: 0, mask: 0, stacks: 0, accept: 0, admits: 0 });
      texts += outputs.length;
      triggered += r.triggered!;
    }
    expect(triggered).toBeGreaterThan(texts / 3);
  }, 1_800_000);
});

// ---------------------------------------------------------------------------------------------

/** Random patterns in the supported subset (bounded lookaheads, captures outside repetitions). */
// No quantifier inside a quantified atom and short texts: std::regex backtracks, and nested
// quantifiers over a longer text would keep the reference busy for minutes (what the engine is for).
function randomPattern(r: () => number, depth = 0, noCapture = false, inRepeat = false): string {
  const atoms = ["a", "b", "to", "<\\|", "\\|>", "x", " ", "\\s", "\\S", "\\d", "\\w", ".", "[ab]", "[^<]", "[a-c\\s]", "\\n", "é"];
  const quantifiers = ["", "", "", "", "*", "+", "?", "{1,3}", "*?", "+?", "??", "{0,2}?"];
  const n = 1 + Math.floor(r() * 4);
  let out = "";
  for (let i = 0; i < n; i++) {
    const q = inRepeat ? "" : quantifiers[Math.floor(r() * quantifiers.length)]!;
    const repeated = q !== "" && !q.startsWith("?");
    const inner = noCapture || repeated;
    const loop = inRepeat || q !== "";
    const k = r();
    let atom: string;
    if (depth < 3 && k < 0.15) atom = `(?:${randomPattern(r, depth + 1, inner, loop)}|${randomPattern(r, depth + 1, inner, loop)})`;
    else if (depth < 3 && k < 0.25 && !inner) atom = `(${randomPattern(r, depth + 1, inner, loop)})`;
    else if (depth < 3 && k < 0.3) {
      out += `(?${r() < 0.5 ? "=" : "!"}${["a", "to", "b|x", "[ab]{1,2}"][Math.floor(r() * 4)]})`;
      continue;
    } else atom = atoms[Math.floor(r() * atoms.length)]!;
    out += atom + q;
  }
  if (depth === 0 && r() < 0.15) out = "^" + out;
  if (depth === 0 && r() < 0.15) out += "$";
  return out;
}

function randomText(r: () => number): string {
  const alphabet = ["a", "b", "x", "t", "o", "to", " ", "\n", "<|", "|>", "<", "1", "é", "ab"];
  let s = "";
  const n = Math.floor(r() * 8);
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)]!;
  return s;
}

describe("trigger matcher = std::regex (llama.cpp's find)", () => {
  it("the vendored templates' patterns and words, on outputs fed in random pieces", async () => {
    const patterns = [...new Set(chatPlanGrammars().flatMap((g) => g.patterns ?? []))];
    const r0 = rng(5);
    const texts = [...TRIGGER_SNIPPETS, ...Array.from({ length: 40 }, () => outputsFor(patterns, Math.floor(r0() * 1e9), 1)[0]!)];
    const r = await program.call("regex.diff", { patterns, texts, seed: 3 });
    expect(r.unsupported, JSON.stringify(r.unsupportedPatterns)).toBe(0);
    expect(r.mismatches, JSON.stringify(r.details)).toBe(0);
    expect(r.fired).toBeGreaterThan(20);
  }, 600_000);

  it("random patterns of the supported subset", async () => {
    const r0 = rng(11);
    const patterns = Array.from({ length: FULL ? 3000 : 400 }, () => randomPattern(r0));
    const texts = Array.from({ length: FULL ? 40 : 16 }, () => randomText(r0));
    const total = { cases: 0, fired: 0, unsupported: 0, rejectedByBoth: 0 };
    for (let i = 0; i < patterns.length; i += 50) {
      const r = await program.call("regex.diff", { patterns: patterns.slice(i, i + 50), texts, seed: 9 + i });
      expect(r.mismatches, JSON.stringify(r.details)).toBe(0);
      expect(r.unsupported, JSON.stringify(r.unsupportedPatterns)).toBe(0);
      for (const k of Object.keys(total) as Array<keyof typeof total>) total[k] += r[k];
    }
    console.log(`regex.diff: ${JSON.stringify(total)}`);
    expect(total.fired).toBeGreaterThan(100);
  }, 600_000);
});
