// The request contract's sampler fields (issue 13.2) on the tiny model: logit bias, frequency and
// presence penalties, per-token log probabilities from the sampler's candidates.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { collect } from "./helpers.js";

let model: Model;
let context: Context;
let prompt: Int32Array;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nAnswer<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterAll(() => {
  model?.dispose();
});

describe("sampler fields", () => {
  it("logitBias: -Infinity bans a token, a large bias forces one", async () => {
    const free = await context.generate(prompt, { temperature: 0, maxTokens: 4 }).result();
    const first = free.tokens[0]!;
    const banned = await context.generate(prompt, { temperature: 0, maxTokens: 4, logitBias: { [first]: -Infinity } }).result();
    expect(banned.tokens[0]).not.toBe(first);
    const x = model.tokenize("hello", { addSpecial: false })[0]!;
    const forced = await context.generate(prompt, { temperature: 0.8, seed: 3, maxTokens: 6, logitBias: new Map([[x, 100]]) }).result();
    expect(forced.tokens).toEqual(Array(6).fill(x));
  });

  it("frequencyPenalty grows with each occurrence; presencePenalty is paid once", async () => {
    const x = model.tokenize("hello", { addSpecial: false })[0]!;
    // +40 keeps x on top by a wide margin; frequencyPenalty 2 takes 2 more per occurrence, so
    // other tokens win after some 20, while presencePenalty 2 costs x its margin only once
    const bias = { [x]: 40 };
    const base = await context.generate(prompt, { temperature: 0, maxTokens: 40, logitBias: bias }).result();
    expect(base.tokens).toEqual(Array(40).fill(x));
    const freq = await context.generate(prompt, { temperature: 0, maxTokens: 40, logitBias: bias, frequencyPenalty: 2 }).result();
    expect(freq.tokens.slice(0, 5)).toEqual(Array(5).fill(x));
    expect(freq.tokens.filter((t) => t !== x).length).toBeGreaterThan(0);
    const presence = await context.generate(prompt, { temperature: 0, maxTokens: 40, logitBias: bias, presencePenalty: 2 }).result();
    expect(presence.tokens).toEqual(Array(40).fill(x));
  });

  it("logprobs: the chosen token first, then the top alternatives, all log probabilities", async () => {
    const items = await collect(context.generate(prompt, { temperature: 0, maxTokens: 8, logprobs: true, topLogprobs: 5 }));
    expect(items.length).toBe(8);
    for (const item of items) {
      const x = item.extra!;
      expect(x.ids.length).toBe(6);
      expect(x.ids[0]).toBe(item.token);
      // greedy: the chosen token is the most likely one
      expect(x.ids[1]).toBe(item.token);
      expect(x.values[0]).toBeCloseTo(x.values[1]!, 5);
      for (let k = 1; k < 6; k++) {
        expect(x.values[k]!).toBeLessThanOrEqual(0);
        if (k > 1) expect(x.values[k]!).toBeLessThanOrEqual(x.values[k - 1]!);
      }
      const mass = Array.from(x.values.subarray(1)).reduce((s, v) => s + Math.exp(v), 0);
      expect(mass).toBeLessThanOrEqual(1 + 1e-5);
    }
    const sampled = await collect(context.generate(prompt, { temperature: 1, seed: 9, maxTokens: 8, logprobs: true }));
    for (const item of sampled) {
      expect(item.extra!.ids.length).toBe(1);
      expect(item.extra!.values[0]!).toBeLessThanOrEqual(0);
    }
    const none = await collect(context.generate(prompt, { temperature: 0, maxTokens: 3 }));
    expect(none.every((i) => i.extra === undefined)).toBe(true);
  });

  it("bad values are errors naming the field", () => {
    expect(() => context.generate(prompt, { topLogprobs: 3 })).toThrow(/topLogprobs needs logprobs/);
    expect(() => context.generate(prompt, { logprobs: true, topLogprobs: 21 })).toThrow(/topLogprobs/);
    expect(() => context.generate(prompt, { logitBias: { [model.vocabSize]: 1 } })).toThrow(/logitBias key/);
    expect(() => context.generate(prompt, { logitBias: { 5: Number.NaN } })).toThrow(/logitBias\[5\]/);
    expect(() => context.generate(prompt, { frequencyPenalty: 3 })).toThrow(/frequencyPenalty/);
  });
});
