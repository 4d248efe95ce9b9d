// One prefix for many sequences (issue 23): a sequence whose prompt starts with what another
// sequence of the context holds copies those cells (llama_memory_seq_cp) instead of decoding
// them, with split and unified KV; the output is the same as a cold run. Memories that cannot trim
// (hybrid, SWA without swaFull) copy a whole other sequence, or part of it from that sequence's
// checkpoint; prompts started together wait for the one decoding their common prefix.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";

let qwen: Model;
let lfm2: Model;
let gemma3: Model;
const words = (n: number, salt: number) => Array.from({ length: n }, (_, i) => `w${(i * 7 + salt) % 97}`).join(" ");
const greedy = { maxTokens: 16, temperature: 0 };

beforeAll(async () => {
  qwen = await loadTestModel();
  lfm2 = await loadTestModel("lfm2");
  gemma3 = await loadTestModel("gemma3");
});

afterAll(() => {
  qwen?.dispose();
  lfm2?.dispose();
  gemma3?.dispose();
});

async function cold(model: Model, prompt: Int32Array): Promise<number[]> {
  const c = model.createContext({ contextSize: 1024, threads: 1 });
  const r = await c.generate(prompt, greedy).result();
  c.dispose();
  return r.tokens;
}

describe("shared prefix", () => {
  for (const kvUnified of [false, true]) {
    it(`eight agents with one system prompt prefill it once (kvUnified ${kvUnified}); each output equals a cold run`, async () => {
      const system = qwen.tokenize(`system: ${words(250, 1)}`);
      const prompts = Array.from({ length: 8 }, (_, i) => Int32Array.from([...system, ...qwen.tokenize(` user ${i}: ${words(10, i)}`)]));
      const c = qwen.createContext({ contextSize: 1024, sequences: 8, kvUnified, threads: 1 });
      const seqs = Array.from({ length: 8 }, () => c.getSequence());
      const first = await seqs[0]!.generate(prompts[0]!, greedy).result();
      expect(first.stats.sharedTokens).toBe(0);
      const rest = await Promise.all(seqs.slice(1).map((s, i) => s.generate(prompts[i + 1]!, greedy).result()));
      for (const r of rest) {
        // at least the system prompt came from another sequence
        expect(r.stats.sharedTokens).toBeGreaterThanOrEqual(system.length - 1);
        expect(r.stats.reusedTokens).toBe(r.stats.sharedTokens);
      }
      const decoded = [first, ...rest].reduce((n, r) => n + r.stats.promptTokens - r.stats.reusedTokens, 0);
      expect(decoded).toBeLessThan(system.length + 8 * 40);
      for (const [i, r] of [first, ...rest].entries()) expect(r.tokens).toEqual(await cold(qwen, prompts[i]!));
      c.dispose();
    });
  }

  it("hybrid: a prompt that extends all of another sequence copies it; without mid-prompt checkpoints a partial prefix is decoded", async () => {
    const base = lfm2.tokenize(words(200, 2));
    const c = lfm2.createContext({ contextSize: 1024, sequences: 3, threads: 1, checkpointInterval: 0 });
    const [a, b, d] = [c.getSequence(), c.getSequence(), c.getSequence()];
    const ra = await a.generate(base, greedy).result();
    const extended = Int32Array.from([...a.tokens, ...lfm2.tokenize(` more ${words(8, 3)}`)]);
    const rb = await b.generate(extended, greedy).result();
    expect(rb.stats.sharedTokens).toBe(a.tokens.length);
    expect(rb.tokens).toEqual(await cold(lfm2, extended));
    // only part of a's tokens: a's recurrent state is past it, nothing to copy
    const partial = Int32Array.from([...base.slice(0, 150), ...lfm2.tokenize(" other")]);
    const rd = await d.generate(partial, greedy).result();
    expect(rd.stats.sharedTokens).toBe(0);
    expect(rd.tokens).toEqual(await cold(lfm2, partial));
    expect(ra.tokens).toEqual(await cold(lfm2, base));
    c.dispose();
  });

  const noTrim = [
    ["hybrid", () => lfm2, {}],
    ["SWA without swaFull", () => gemma3, { swaFull: false }],
  ] as const;
  for (const [name, model, extra] of noTrim) {
    for (const kvUnified of [false, true])
    it(`${name}: a partial prefix starts from the other sequence's mid-prompt checkpoint (kvUnified ${kvUnified})`, async () => {
      const m = model();
      const base = m.tokenize(words(200, 2)).slice(0, 200);
      const c = m.createContext({ contextSize: 1024, sequences: 2, kvUnified, threads: 1, checkpointInterval: 64, ...extra });
      expect(c.memory).toBe("checkpoints");
      const [a, b] = [c.getSequence(), c.getSequence()];
      await a.generate(base, greedy).result();
      const partial = Int32Array.from([...base.slice(0, 150), ...m.tokenize(" other words")]);
      const rb = await b.generate(partial, greedy).result();
      // checkpoints at 64 and 128: the newest within the 150 shared tokens
      expect(rb.stats.sharedTokens).toBe(128);
      expect(rb.stats.checkpointTokens).toBe(128);
      expect(rb.stats.reusedTokens).toBe(128);
      expect(rb.tokens).toEqual(await cold(m, partial));
      c.dispose();
    });

    it(`${name}: eight prompts started together decode their common prefix once; outputs equal cold runs`, async () => {
      const m = model();
      const system = m.tokenize(`system: ${words(150, 4)}`);
      const prompts = Array.from({ length: 8 }, (_, i) => Int32Array.from([...system, ...m.tokenize(` user ${i}: ${words(6, i)}`)]));
      const c = m.createContext({ contextSize: 512, sequences: 8, kvUnified: true, threads: 1, checkpointInterval: 64, ...extra });
      const seqs = Array.from({ length: 8 }, () => c.getSequence());
      const results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i]!, greedy).result()));
      // Admitted while the first still decodes the prefix: they wait for it and copy all of it.
      // Admitted after it passed the prefix (the decode thread woke between two generate calls):
      // they start from its last mid-prompt checkpoint within the prefix.
      const followers = results.filter((r) => r.stats.sharedTokens! > 0);
      expect(followers.length).toBe(7);
      for (const r of followers) expect(r.stats.sharedTokens).toBeGreaterThanOrEqual(Math.floor(system.length / 64) * 64);
      const decoded = results.reduce((n, r) => n + r.stats.promptTokens - r.stats.reusedTokens, 0);
      expect(decoded).toBeLessThan(system.length + 7 * 64 + 8 * 20);
      for (const [i, r] of results.entries()) expect(r.tokens).toEqual(await cold(m, prompts[i]!));
      c.dispose();
    });
  }

  it("transformer: eight prompts started together decode their common prefix once", async () => {
    const system = qwen.tokenize(`system: ${words(150, 4)}`);
    const prompts = Array.from({ length: 8 }, (_, i) => Int32Array.from([...system, ...qwen.tokenize(` user ${i}: ${words(6, i)}`)]));
    const c = qwen.createContext({ contextSize: 512, sequences: 8, threads: 1 });
    const seqs = Array.from({ length: 8 }, () => c.getSequence());
    const results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i]!, greedy).result()));
    expect(results.filter((r) => r.stats.sharedTokens! >= system.length).length).toBe(7);
    for (const [i, r] of results.entries()) expect(r.tokens).toEqual(await cold(qwen, prompts[i]!));
    c.dispose();
  });
});
