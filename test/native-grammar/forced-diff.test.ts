/**
 * Forced text (native/grammar/forced.h) against a brute-force walk of llama.cpp's own stacks over
 * code points (llamapeg-grammar-test forced.diff), at random reachable states of every vendored
 * template's tool-call grammar (lazy ones from their root, as after the trigger) and of JSON-schema
 * grammars; the walks take the forced run's tokens half the time, which must spell it and be taken
 * by llama.cpp's grammar leaving the same stacks as ours. LLAMAPEG_GRAMMAR_FULL=1: longer walks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type CorpusGrammar, chatPlanGrammars, schemaGrammars } from "./corpus.js";
import { GrammarProgram, vocabPath } from "./program.js";

const FULL = process.env.LLAMAPEG_GRAMMAR_FULL === "1";

interface ForcedDiff {
  states: number;
  forcedStates: number;
  forcedBytes: number;
  mismatches: number;
  tokenized: number;
  untokenized: number;
  forcedTokens: number;
  tokenMismatches: number;
  tokenElements: boolean;
  details: unknown[];
  invalid?: string;
  mismatch?: boolean;
}

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
  forcedStates: number;
  forcedBytes: number;
  tokenized: number;
  untokenized: number;
  forcedTokens: number;
}

async function diff(vocab: string, g: CorpusGrammar, seed: number, tally: Tally): Promise<void> {
  const r = await program.call<ForcedDiff>("forced.diff", { path: vocabPath(vocab), gbnf: g.gbnf, seed, walks: FULL ? 4 : 2, steps: FULL ? 40 : 16 });
  expect(r.invalid, `${g.name}`).toBeUndefined();
  expect({ bytes: r.mismatches, tokens: r.tokenMismatches }, `${vocab} ${g.name}: ${JSON.stringify(r.details[0] ?? null).slice(0, 1200)}`).toEqual({
    bytes: 0,
    tokens: 0,
  });
  expect(r.states).toBeGreaterThan(0);
  tally.grammars++;
  for (const k of ["states", "forcedStates", "forcedBytes", "tokenized", "untokenized", "forcedTokens"] as const) tally[k] += r[k];
}

const empty = (): Tally => ({ grammars: 0, states: 0, forcedStates: 0, forcedBytes: 0, tokenized: 0, untokenized: 0, forcedTokens: 0 });

describe("forced text = a brute-force walk of llama.cpp's stacks", () => {
  it("every chat plan grammar of the vendored templates, on Qwen 2", async () => {
    const plans = chatPlanGrammars();
    expect(plans.length).toBeGreaterThan(20);
    const tally = empty();
    for (const [i, g] of plans.entries()) await diff("qwen2", g, 700 + i, tally);
    console.log(`forced, chat plans on qwen2: ${JSON.stringify(tally)}`);
    // tool-call grammars force their markers, names and separators: most walks meet forced text
    expect(tally.forcedStates).toBeGreaterThan(tally.grammars);
    expect(tally.tokenized).toBeGreaterThan(tally.untokenized * 10);
  }, 1_800_000);

  it("JSON-schema grammars, on Qwen 2 and Phi-3 (SentencePiece: the space prefix at the boundary)", async () => {
    const tally = empty();
    const schemas = schemaGrammars();
    for (const [i, g] of schemas.entries()) {
      if (!FULL && i % 2 === 1) continue;
      await diff(i % 4 === 0 ? "phi-3" : "qwen2", g, 900 + i, tally);
    }
    console.log(`forced, schemas: ${JSON.stringify(tally)}`);
    expect(tally.forcedStates).toBeGreaterThan(0);
    expect(tally.tokenized).toBeGreaterThan(0);
  }, 1_800_000);
});
