// Hostile grammars and trigger patterns reach native code (as they would through the library's
// own API) and must end in a coded error or a bounded generation: never a crash (stack overflow in
// llama.cpp's recursive parser or in std::regex), never a hang that abort() cannot end.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type Model } from "../../lib/llama/index.js";
import { loadBinding } from "../../lib/native/load.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { codeOf } from "./helpers.js";

let model: Model;
let context: Context;
let prompt: Int32Array;

beforeAll(async () => {
  const path = await ensureTestModel("tiny");
  model = await loadModel(path);
  await openRaw(path);
  context = model.createContext({ contextSize: 8192, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nWrite<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterEach(() => {
  if (context.busy) {
    context.dispose();
    context = model.createContext({ contextSize: 8192, threads: 2 });
  }
});

afterAll(() => {
  raw?.context.dispose();
  raw?.model.dispose();
  model?.dispose();
});

// The library checks GBNF in TypeScript first (lib/gbnf); the native layer must hold on its own,
// so these go to the addon directly, as the library would pass them without that check.
let raw: { model: any; context: any; seq: number; prompt: Int32Array } | undefined;

async function openRaw(path: string): Promise<void> {
  const native = loadBinding() as any;
  const m = await native.loadModel(path, { gpuLayers: 0, useMmap: true, vocabOnly: false }, undefined);
  const c = m.createContext({ contextSize: 256, batchSize: 256, sequences: 1, kvUnified: false, threads: 1, threadsBatch: 0, seed: 1 });
  raw = { model: m, context: c, seq: c.acquireSequence(), prompt: m.tokenize("Hello", false, false) };
}

function rawGenerate(gbnf: string): void {
  raw!.context.generate(raw!.seq, raw!.prompt, rawOptions(gbnf), () => {});
}

function rawOptions(gbnf: string): object {
  return {
    maxTokens: 4, temperature: 0, topK: 40, topP: 0.95, minP: 0.05, seed: 1, repeatPenalty: 1,
    stopTokens: new Int32Array(0), preservedTokens: new Int32Array(0), special: false,
    grammar: { gbnf, root: "root", lazy: false, triggerPatterns: [], triggerTokens: new Int32Array(0), prefillTokens: new Int32Array(0) },
    grammarResample: "fast", grammarFirst: false, contextShift: false, contextShiftKeep: 0, flushTokens: 8, flushMs: 5, windowTokens: 64,
  };
}

async function rejected(gbnf: string, message: RegExp): Promise<void> {
  // through the library: a coded error (from its TypeScript check or from native code)
  const error = await codeOf(() => context.generate(prompt, { maxTokens: 4, grammar: { gbnf } }));
  expect(error.code).toBe("ERR_GRAMMAR_INVALID");
  // and native code by itself
  let caught: any;
  try {
    rawGenerate(gbnf);
  } catch (e) {
    caught = e;
  }
  expect(caught?.code).toBe("ERR_GRAMMAR_INVALID");
  expect(caught?.message).toMatch(message);
}

describe("hostile GBNF", () => {
  it("deep nesting, long left chains, exponential left-reference DAGs, bad or huge repetitions: coded errors", async () => {
    const nested = `root ::= ${"(".repeat(20_000)}"a"${")".repeat(20_000)}`;
    const chain = ["root ::= r0", ...Array.from({ length: 70_000 }, (_, i) => `r${i} ::= r${i + 1}`), 'r70000 ::= "a"'].join("\n");
    const dag = ["root ::= d0", ...Array.from({ length: 60 }, (_, i) => `d${i} ::= d${i + 1} "x" | d${i + 1} "y"`), 'd60 ::= "z"'].join("\n");
    await rejected(nested, /nested deeper than/);
    await rejected(chain, /chain of more than/);
    await rejected(dag, /left-recursion check/);
    await rejected('root ::= "a"{5,2}', /minimum exceeds its maximum/);
    await rejected(`root ::= "${"x".repeat(10_000)}"{1999}`, /expands to more than/);
    // and the context still works
    expect((await context.generate(prompt, { maxTokens: 2 }).result()).tokens.length).toBeGreaterThan(0);
  }, 120_000);

  it("a grammar whose parse stacks multiply with every token stops with a coded error", async () => {
    const gbnf = 'root ::= x\nx ::= "a" x | "a" x "b" | "a" x "c" | "a" x "d" | ""';
    const generation = context.generate(prompt, { temperature: 0, maxTokens: 64, grammar: { gbnf } });
    const error = await codeOf(() => generation.result());
    expect(error.code).toBe("ERR_GRAMMAR_INVALID");
    expect(error.message).toMatch(/too ambiguous/);
  }, 120_000);
});

describe("hostile trigger patterns", () => {
  const lazy = (triggerPatterns: string[]) => ({ gbnf: 'root ::= "x"', lazy: true, triggerPatterns });
  // The random model samples an end of generation every few thousand tokens: banned, so these
  // long generations run to their length.
  const noEog = () => Object.fromEntries(Array.from({ length: model.vocabSize }, (_, t) => t).filter((t) => model.isEog(t)).map((t) => [t, -Infinity]));

  it("20k nested groups, unsupported constructs: ERR_GRAMMAR_INVALID naming the pattern", async () => {
    const deep = `${"(".repeat(20_000)}a${")".repeat(20_000)}`;
    for (const [pattern, message] of [
      [deep, /nested deeper than/],
      ["(a)\\1", /backreferences/],
      ["\\bword", /word boundaries/],
      ["(?<=a)b", /lookbehind/],
      ["a(?=b*)", /lookahead that can match more than/],
      ["(a|b)+", /capturing group inside a repetition/],
    ] as const) {
      const error = await codeOf(() => context.generate(prompt, { maxTokens: 2, grammar: lazy([pattern]) }));
      expect(error.code, pattern.slice(0, 40)).toBe("ERR_GRAMMAR_INVALID");
      expect(error.message).toMatch(message);
      expect(error.message).toContain("trigger pattern 0");
    }
  }, 60_000);

  it("^[\\s\\S]*X$ over thousands of tokens (std::regex overflowed its stack after ~4,000)", async () => {
    const r = await context.generate(prompt, { maxTokens: 4500, logitBias: noEog(), grammar: lazy(["^[\\s\\S]*<never>$", "^([\\s\\S]*)\\n\\n\\n\\n\\n\\n\\n\\n\\n\\nQQQ$"]) }).result();
    expect(r.stats.generatedTokens).toBeGreaterThan(4000);
    expect(r.stats.stopReason).toBe("length");
  }, 600_000);

  it("patterns that are exponential for a backtracking matcher run in bounded time, and abort() ends the generation", async () => {
    // (a capturing group inside a repetition is rejected, see above: these are the non-capturing forms)
    // (each ends in bytes a random model does not write, so none fires)
    const patterns = ["(?:a*)*\\x01\\x02", "(?:a|a)*\\x01\\x02", "(?:.*){20}\\x01\\x02", "(?:\\s*\\S*)*\\x01\\x02", "^(?:(?:a+)+)+$", "(?:x+x+)+\\x01\\x02"];
    // (the test's timeout is the bound: a backtracking matcher would not finish these)
    const r = await context.generate(prompt, { maxTokens: 600, logitBias: noEog(), grammar: lazy(patterns) }).result();
    expect(r.stats.generatedTokens).toBe(600);
    const controller = new AbortController();
    const generation = context.generate(prompt, { maxTokens: 100_000, logitBias: noEog(), signal: controller.signal, grammar: lazy(patterns) });
    setTimeout(() => controller.abort(), 200);
    const stopped = await generation.result();
    expect(stopped.stats.stopReason).toBe("abort");
  }, 300_000);
});
