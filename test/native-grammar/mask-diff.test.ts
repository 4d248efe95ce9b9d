/**
 * The mask engine against llama.cpp's own grammar code (llamapeg-grammar-test, vocab-only models):
 * at random reachable states of each grammar, the admitted token set equals
 * llama_grammar_apply_impl's over the whole vocabulary, our accept leaves the same stacks and partial
 * character as llama_grammar_accept_impl, and the single-token check agrees on sampled tokens.
 * Qwen 2 plus three other vendored vocabularies (byte-level BPE, SentencePiece with byte tokens,
 * and Gemma's 262k). LLAMAPEG_GRAMMAR_FULL=1 runs every grammar on every vocabulary, longer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  type CorpusGrammar,
  chatPlanGrammars,
  edgeGrammars,
  horizonGrammars,
  randomPegGrammars,
  sampleGrammars,
  schemaGrammars,
  tokenGrammars,
} from "./corpus.js";
import { type DiffResult, GrammarProgram, vocabPath } from "./program.js";

const FULL = process.env.LLAMAPEG_GRAMMAR_FULL === "1";
const VOCABS = ["qwen2", "llama-bpe", "phi-3", "gemma-4"] as const;

let program: GrammarProgram;

beforeAll(async () => {
  program = await GrammarProgram.start();
}, 600_000);

afterAll(async () => {
  await program?.close();
});

interface Tally {
  grammars: number;
  states: number;
  invalid: number;
  /** cache entries taken from an earlier grammar's: the masks above were checked with them too */
  sharedHits?: number;
  localHits?: number;
}

async function diff(vocab: string, g: CorpusGrammar, seed: number, walks: number, steps: number, tally: Tally, warmAll = false, reuse = false): Promise<void> {
  const r = await program.call<DiffResult>("mask.diff", { path: vocabPath(vocab), gbnf: g.gbnf, seed, walks, steps, warmAll, reuse });
  if (r.invalid !== undefined) {
    // Both sides must reject a grammar alike: the program reports "mismatch" when only llama.cpp does.
    expect((r as { mismatch?: boolean }).mismatch, `${vocab} ${g.name}: ${r.invalid}`).toBeUndefined();
    tally.invalid++;
    return;
  }
  const found = { mask: r.maskMismatches, stacks: r.stackMismatches, admits: r.admitsMismatches, accept: r.acceptMismatches };
  expect(found, `${vocab} ${g.name}: ${JSON.stringify(r.mismatches[0] ?? null).slice(0, 1500)}`).toEqual({
    mask: 0,
    stacks: 0,
    admits: 0,
    accept: 0,
  });
  expect(r.states).toBeGreaterThan(0);
  tally.grammars++;
  tally.states += r.states;
  tally.sharedHits = (tally.sharedHits ?? 0) + (r.sharedHits ?? 0);
  tally.localHits = (tally.localHits ?? 0) + (r.localHits ?? 0);
}

function pick<T>(list: T[], every: number, offset: number): T[] {
  return FULL ? list : list.filter((_, i) => i % every === offset % every);
}

describe("mask engine = llama.cpp's grammar (admitted sets, stacks, single checks)", () => {
  it("every chat plan grammar of the vendored templates, on Qwen 2", async () => {
    const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
    const plans = chatPlanGrammars();
    expect(plans.length).toBeGreaterThan(20);
    for (const [i, g] of plans.entries()) await diff("qwen2", g, 100 + i, FULL ? 4 : 2, FULL ? 16 : 5, tally, i % 3 === 0);
    console.log(`chat plans on qwen2: ${JSON.stringify(tally)}`);
    expect(tally.invalid).toBe(0);
    expect(tally.sharedHits).toBeGreaterThan(100);
  }, 1_800_000);

  for (const [k, vocab] of VOCABS.slice(1).entries()) {
    it(`chat plan grammars (a third of them), JSON schemas and edge cases on ${vocab}`, async () => {
      const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
      const grammars = [...pick(chatPlanGrammars(), 3, k), ...pick(schemaGrammars(), 8, k), ...edgeGrammars()];
      for (const [i, g] of grammars.entries()) await diff(vocab, g, 200 + i, FULL ? 3 : 1, FULL ? 12 : 5, tally);
      console.log(`${vocab}: ${JSON.stringify(tally)}`);
      expect(tally.invalid).toBe(0);
    }, 1_800_000);
  }

  it("JSON schemas, llama.cpp's sample grammars and edge cases, on Qwen 2", async () => {
    const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
    const grammars = [...pick(schemaGrammars(), 3, 0), ...sampleGrammars(), ...edgeGrammars()];
    // half of them with the whole position cache built first (the eager warm-up), half built as needed
    for (const [i, g] of grammars.entries()) await diff("qwen2", g, 300 + i, FULL ? 4 : 2, FULL ? 16 : 6, tally, i % 2 === 0);
    console.log(`schemas/samples/edges on qwen2: ${JSON.stringify(tally)}`);
    expect(tally.invalid).toBe(0);
    // the schemas repeat pieces (strings, numbers, separators): many masks used another grammar's entries
    expect(tally.sharedHits).toBeGreaterThan(100);
  }, 1_800_000);

  it("one state reset between walks (the addon's grammar pool) = a fresh llama.cpp grammar each walk", async () => {
    const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
    const grammars = [...pick(chatPlanGrammars(), 4, 1), ...pick(schemaGrammars(), 4, 1), ...sampleGrammars(), ...edgeGrammars()];
    for (const [i, g] of grammars.entries()) await diff("qwen2", g, 700 + i, 4, FULL ? 12 : 6, tally, i % 2 === 0, true);
    console.log(`reset between walks on qwen2: ${JSON.stringify(tally)}`);
    expect(tally.invalid).toBe(0);
  }, 1_800_000);

  it("random PEG trees exported to GBNF", async () => {
    const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
    const grammars = randomPegGrammars(7, FULL ? 300 : 80);
    for (const [i, g] of grammars.entries()) await diff(i % 4 === 0 ? "phi-3" : "qwen2", g, 400 + i, 2, FULL ? 12 : 5, tally);
    console.log(`random PEG: ${JSON.stringify(tally)}`);
    // many trees repeat something that may match nothing, which llama.cpp calls left recursion
    // (both sides reject those alike, checked above); enough must remain
    expect(tally.grammars).toBeGreaterThan(grammars.length / 5);
  }, 1_800_000);

  it("long counted repetitions around the longest piece share entries only past its reach, on Llama 3 and Qwen 2", async () => {
    for (const vocab of ["llama-bpe", "qwen2"]) {
      const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
      // a few short steps into each: the first states have N, N-1, ... spaces left
      for (const [i, g] of horizonGrammars().entries()) await diff(vocab, g, 800 + i, 3, 4, tally);
      console.log(`horizon on ${vocab}: ${JSON.stringify(tally)}`);
      expect(tally.invalid).toBe(0);
      expect(tally.sharedHits).toBeGreaterThan(0);
      // the chains above a large rule: their lower frames are keyed by address, within each grammar
      expect(tally.localHits).toBeGreaterThan(0);
    }
  }, 600_000);

  it("TOKEN elements (llama.cpp decides them by id), on Qwen 2 and Phi-3", async () => {
    const tally: Tally = { grammars: 0, states: 0, invalid: 0 };
    for (const vocab of ["qwen2", "phi-3"]) {
      for (const [i, g] of tokenGrammars({ a: 64, b: 300, c: 1000 }).entries()) await diff(vocab, g, 500 + i, 3, 8, tally);
    }
    expect(tally.invalid).toBe(0);
  }, 600_000);
});
