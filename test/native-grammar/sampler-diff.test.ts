/**
 * The sampler's fast path (native/sampling-select: the top k straight from the logits row) against
 * its full n_vocab path (llama.cpp's chain over every candidate), in llamapeg-grammar-test's
 * sampler.diff: random rows (wide, narrow, quantized, near-equal, extreme, -inf, tied maxima),
 * random temperature / topK (1..128, and out-of-range values that stay on the full path) / topP /
 * minP, logit biases (-inf bans, duplicates, out-of-range ids), penalties with random histories,
 * multi-step runs. Where the top k+1 values are distinct the tokens must be equal; where they tie,
 * llama.cpp's partial_sort orders equals arbitrarily, so differing tokens must have equal values
 * (counted as tieDifferences). Grammar cases (Qwen 2 vocabulary): rejection-first JSON and a lazy
 * grammar whose trigger is not reached.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { GrammarProgram, ROOT, vocabPath } from "./program.js";

interface SamplerDiff {
  nVocab: number;
  cases: number;
  fastCases: number;
  grammarCases: number;
  steps: number;
  strictSteps: number;
  tiedSteps: number;
  tieDifferences: number;
  deadEnds: number;
  mismatchCount: number;
  mismatches: unknown[];
}

let program: GrammarProgram;

beforeAll(async () => {
  program = await GrammarProgram.start();
}, 600_000);

afterAll(async () => {
  await program?.close();
});

function check(r: SamplerDiff, label: string): void {
  expect(r.mismatchCount, `${label}: ${JSON.stringify(r.mismatches.slice(0, 3))}`).toBe(0);
  // the fast path ran in most cases, and most steps were strict (distinct values)
  expect(r.fastCases).toBeGreaterThan(r.cases * 0.6);
  expect(r.strictSteps).toBeGreaterThan(r.steps * 0.5);
}

// `npm test` runs a fifth of the cases (they passed the 60 s test timeout only on an idle machine);
// `npm run fuzz` (LLAMAPEG_FUZZ=long) runs them all. Scale the work, not the timeouts.
const FULL = process.env.LLAMAPEG_FUZZ === "long";
const smallCases = FULL ? 1500 : 300;
const qwenCases = FULL ? 150 : 30;

describe("sampler fast path = full path", () => {
  it.each([7, 32, 1000])(`n_vocab %i: ${smallCases} cases x 8 steps`, async (nVocab) => {
    const r = await program.call<SamplerDiff>("sampler.diff", { seed: nVocab, cases: smallCases, steps: 8, nVocab });
    check(r, `n_vocab ${nVocab}`);
    expect(r.steps).toBe(smallCases * 8);
    expect(r.tiedSteps).toBeGreaterThan(0);
  });

  it(`n_vocab 151,936 (Qwen): ${qwenCases} cases x 8 steps`, async () => {
    const r = await program.call<SamplerDiff>("sampler.diff", { seed: 151936, cases: qwenCases, steps: 8, nVocab: 151936 });
    check(r, "n_vocab 151936");
    expect(r.steps).toBe(qwenCases * 8);
  });

  it("with grammars on the Qwen 2 vocabulary: rejection-first JSON, lazy untriggered", async () => {
    const json = readFileSync(join(ROOT, "vendor", "llama.cpp", "grammars", "json.gbnf"), "utf8");
    const grammars = [
      { gbnf: json },
      { gbnf: 'root ::= [a-z ]+ "." ' },
      { gbnf: 'root ::= "<tool_call>" [a-z]+', lazy: true, patterns: ["<tool_call>"] },
    ];
    const r = await program.call<SamplerDiff>("sampler.diff", { seed: 9, cases: 60, steps: 10, path: vocabPath("qwen2"), grammars });
    check(r, "grammars");
    expect(r.grammarCases).toBeGreaterThan(20);
  });
});
