/**
 * The sampler's fast path end to end: real generations on the tiny test model give the same token
 * stream with it as with every token on the full n_vocab path (LLAMAPEG_SAMPLER_FULL=1, read
 * natively when a generation's sampler is created; native/sampling.h), for several seeds and
 * settings: free sampling, greedy, logit bias banning the end-of-generation tokens, penalties, a lazy
 * grammar that is never triggered, and a JSON grammar sampled rejection-first.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, GenerateOptions, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { ROOT } from "./program.js";

let model: Model;
let context: Context;
let prompt: Int32Array;
let eog: number[];
let likely: number[]; // distinct tokens of a greedy run: the candidates a bias changes most

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 1 });
  prompt = model.tokenize("<|im_start|>user\nWrite something<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
  eog = ["<|im_end|>", "<|endoftext|>"].map((t) => model.tokenize(t, { parseSpecial: true, addSpecial: false })[0]!);
  likely = [...new Set((await context.generate(prompt, { temperature: 0, maxTokens: 48 }).result()).tokens)];
});

afterAll(() => {
  delete process.env.LLAMAPEG_SAMPLER_FULL;
  model?.dispose();
});

async function tokens(options: GenerateOptions, full: boolean): Promise<number[]> {
  if (full) process.env.LLAMAPEG_SAMPLER_FULL = "1";
  try {
    return (await context.generate(prompt, options).result()).tokens;
  } finally {
    delete process.env.LLAMAPEG_SAMPLER_FULL;
  }
}

// Bans the first few likely tokens, nudges the next ones up and down.
function mixedBias(): Map<number, number> {
  const bias = new Map<number, number>();
  likely.slice(0, 3).forEach((t) => bias.set(t, -Infinity));
  likely.slice(3, 9).forEach((t, i) => bias.set(t, i % 2 === 0 ? 1.5 : -1));
  return bias;
}

const json = readFileSync(join(ROOT, "vendor", "llama.cpp", "grammars", "json.gbnf"), "utf8");
const free = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 };
const settings: [string, () => GenerateOptions][] = [
  ["free", () => ({ ...free, maxTokens: 96 })],
  ["free, topK 128, topP 1, minP 0", () => ({ temperature: 1.2, topK: 128, topP: 1, minP: 0, maxTokens: 64 })],
  ["greedy, logit bias bans and boosts likely tokens", () => ({ temperature: 0, maxTokens: 48, logitBias: mixedBias() })],
  ["free, logit bias bans and boosts likely tokens", () => ({ ...free, maxTokens: 64, logitBias: mixedBias() })],
  ["logit bias bans EOG", () => ({ ...free, temperature: 1.5, maxTokens: 96, logitBias: Object.fromEntries(eog.map((t) => [t, -Infinity])) })],
  ["penalties", () => ({ ...free, maxTokens: 96, repeatPenalty: 1.3, frequencyPenalty: 0.4, presencePenalty: 0.3, penaltyLastN: 32 })],
  ["lazy grammar, untriggered", () => ({ ...free, maxTokens: 64, grammar: { gbnf: 'root ::= "{" [a-z]+ "}"', lazy: true, triggerPatterns: ["TRIGGER_NEVER_SEEN_\\d+"] } })],
  ["JSON grammar, rejection-first", () => ({ ...free, maxTokens: 64, grammar: { gbnf: json } })],
];

describe("sampler fast path end to end", () => {
  it.each(settings)("%s: same tokens with and without the fast path", async (_name, options) => {
    for (const seed of [1, 2, 3]) {
      const opts = { ...options(), seed };
      const fast = await tokens(opts, false);
      const full = await tokens(opts, true);
      expect(fast.length).toBeGreaterThan(0);
      expect(fast, `seed ${seed}`).toEqual(full);
      const bias = opts.logitBias instanceof Map ? opts.logitBias : new Map(Object.entries(opts.logitBias ?? {}).map(([t, b]) => [Number(t), b]));
      for (const [t, b] of bias) if (b === -Infinity) expect(fast).not.toContain(t);
    }
  });
});
