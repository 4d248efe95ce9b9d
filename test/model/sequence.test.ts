// Sequences of one context generating at once (one decode thread, one batch per step): the same
// greedy tokens as alone, grammars and lazy triggers per sequence, one sequence ending (abort,
// dispose, dead end) without disturbing the others, random interleavings, no starvation.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, GenerationResult, Model, Sequence } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf } from "./helpers.js";

let model: Model;
const texts = ["Once upon a time", "The weather today is", "def fibonacci(n):", "In the beginning there was", "Dear sir, I write to", "1, 2, 3, 4,", "<html><body>", "SELECT * FROM"];
let prompts: Int32Array[];
const smallJson = readFileSync(join(import.meta.dirname, "fixtures", "small-json.gbnf"), "utf8");
// A grammar that never accepts: end of generation is never allowed, so a generation runs until
// its sequence is full (or maxTokens).
const endless = { gbnf: "root ::= [a-z ] root" };

beforeAll(async () => {
  model = await loadTestModel();
  prompts = texts.map((t) => model.tokenize(t));
});

afterAll(() => {
  model?.dispose();
});

function withContext<T>(options: Parameters<Model["createContext"]>[0], fn: (c: Context) => Promise<T>): Promise<T> {
  const c = model.createContext({ threads: 1, ...options });
  return fn(c).finally(() => c.dispose());
}

async function alone(prompt: Int32Array, options: Parameters<Sequence["generate"]>[1]): Promise<GenerationResult> {
  return withContext({ contextSize: 256 }, (c) => c.generate(prompt, options).result());
}

describe("sequences of one context", () => {
  it("batchSize below the number of sequences is a RangeError (llama.cpp needs one output per sequence)", () => {
    expect(() => model.createContext({ sequences: 4, batchSize: 2 })).toThrow(RangeError);
  });

  it("getSequence hands out each sequence once; ERR_NO_SEQUENCE when all are taken; dispose returns one", async () => {
    await withContext({ contextSize: 256, sequences: 3 }, async (c) => {
      expect(c.sequences).toBe(3);
      const s = [c.getSequence(), c.getSequence(), c.getSequence()];
      expect(new Set(s.map((x) => x.id))).toEqual(new Set([0, 1, 2]));
      expect((await codeOf(() => c.getSequence())).code).toBe("ERR_NO_SEQUENCE");
      s[1]!.dispose();
      expect(s[1]!.disposed).toBe(true);
      expect((await codeOf(() => s[1]!.generate(prompts[0]!))).code).toBe("ERR_DISPOSED");
      expect((await codeOf(() => s[1]!.tokens)).code).toBe("ERR_DISPOSED");
      s[1]!.dispose(); // twice is harmless
      const again = c.getSequence();
      expect(again.id).toBe(1);
      expect(again.tokens.length).toBe(0);
    });
  });

  it("a one-sequence context generates itself; then it has no free sequence", async () => {
    await withContext({ contextSize: 256 }, async (c) => {
      await c.generate(prompts[0]!, { maxTokens: 2 }).result();
      expect((await codeOf(() => c.getSequence())).code).toBe("ERR_NO_SEQUENCE");
    });
  });

  it.each([false, true])("greedy outputs of 8 sequences at once equal their outputs alone (kvUnified %s)", async (kvUnified) => {
    // Batched float math can flip a near-tie: on this model the first such flip among these
    // prompts comes after 134 tokens (scripts/bench-parallel.mjs measures it); 48 stay clear of it.
    const expected = await Promise.all(prompts.map((p) => alone(p, { maxTokens: 48, temperature: 0 })));
    await withContext({ contextSize: 256, sequences: 8, kvUnified }, async (c) => {
      const seqs = prompts.map(() => c.getSequence());
      const results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i]!, { maxTokens: 48, temperature: 0 }).result()));
      for (let i = 0; i < prompts.length; i++) expect(results[i]!.tokens, texts[i]).toEqual(expected[i]!.tokens);
    });
  });

  it("each sequence reuses its own KV prefix between turns; the others' turns do not disturb it", async () => {
    await withContext({ contextSize: 256, sequences: 2 }, async (c) => {
      const [a, b] = [c.getSequence(), c.getSequence()];
      const [ra, rb] = await Promise.all([a.generate(prompts[0]!, { maxTokens: 6, temperature: 0 }).result(), b.generate(prompts[1]!, { maxTokens: 6, temperature: 0 }).result()]);
      expect(Array.from(a.tokens)).toEqual([...prompts[0]!, ...ra.tokens.slice(0, -1)]);
      expect(Array.from(b.tokens)).toEqual([...prompts[1]!, ...rb.tokens.slice(0, -1)]);
      const nextA = Int32Array.from([...a.tokens, ...prompts[2]!]);
      const nextB = Int32Array.from([...b.tokens, ...prompts[3]!]);
      const [ta, tb] = await Promise.all([a.generate(nextA, { maxTokens: 10, temperature: 0 }).result(), b.generate(nextB, { maxTokens: 10, temperature: 0 }).result()]);
      expect(ta.stats.reusedTokens).toBe(nextA.length - prompts[2]!.length);
      expect(tb.stats.reusedTokens).toBe(nextB.length - prompts[3]!.length);
      expect(ta.tokens).toEqual((await alone(nextA, { maxTokens: 10, temperature: 0 })).tokens);
      expect(tb.tokens).toEqual((await alone(nextB, { maxTokens: 10, temperature: 0 })).tokens);
      b.clearCache();
      expect(b.tokens.length).toBe(0);
      expect(Array.from(a.tokens).length).toBeGreaterThan(0);
    });
  });

  it("under grammars every concurrent output is valid; a lazy trigger fires in its own sequence only", async () => {
    const free = await alone(prompts[0]!, { temperature: 0, maxTokens: 12 });
    const k = free.tokens.findIndex((t, i) => i >= 2 && free.tokens.indexOf(t) === i);
    const trigger = free.tokens[k]!;
    const lazy = { gbnf: `root ::= <[${trigger}]> ("yes" | "no")`, lazy: true, triggerTokens: [trigger] };
    await withContext({ contextSize: 512, sequences: 6 }, async (c) => {
      const seqs = Array.from({ length: 6 }, () => c.getSequence());
      const runs = await Promise.all([
        ...[0, 1, 2, 3].map((i) => seqs[i]!.generate(prompts[i]!, { seed: 10 + i, temperature: 1, maxTokens: 200, grammar: { gbnf: smallJson } }).result()),
        // The same lazy grammar on prompt 0 (its free output contains the trigger) and prompt 1.
        seqs[4]!.generate(prompts[0]!, { temperature: 0, maxTokens: 40, grammar: lazy }).result(),
        seqs[5]!.generate(prompts[1]!, { temperature: 0, maxTokens: 30, grammar: lazy }).result(),
      ]);
      for (const r of runs.slice(0, 4)) {
        expect(r.stats.stopReason, r.text).toBe("eog");
        expect(() => JSON.parse(r.text), r.text).not.toThrow();
      }
      const triggered = runs[4]!;
      expect(triggered.tokens.slice(0, k + 1)).toEqual(free.tokens.slice(0, k + 1));
      expect(["yes", "no"]).toContain(model.detokenize(triggered.tokens.slice(k + 1)));
      const other = runs[5]!;
      const otherFree = await alone(prompts[1]!, { temperature: 0, maxTokens: 30 });
      if (!otherFree.tokens.includes(trigger)) expect(other.tokens).toEqual(otherFree.tokens);
    });
  });

  it("abort one, dispose one, dead-end one while others run: only those end, each with its own reason", async () => {
    const expected = await Promise.all([4, 5].map((i) => alone(prompts[i]!, { maxTokens: 40, temperature: 0 })));
    await withContext({ contextSize: 512, sequences: 5 }, async (c) => {
      const s = Array.from({ length: 5 }, () => c.getSequence());
      const aborted = s[0]!.generate(prompts[0]!, { temperature: 1, seed: 1 });
      const disposed = s[1]!.generate(prompts[1]!, { temperature: 1, seed: 2 });
      const deadEnd = s[2]!.generate(prompts[2]!, { maxTokens: 20, grammar: { gbnf: `root ::= "a" <[${model.vocabSize + 5}]>` } });
      const keep = [s[3]!.generate(prompts[4]!, { maxTokens: 40, temperature: 0 }), s[4]!.generate(prompts[5]!, { maxTokens: 40, temperature: 0 })];
      let n = 0;
      for await (const _ of aborted) if (++n === 5) aborted.abort();
      expect(aborted.stats!.stopReason).toBe("abort");
      s[1]!.dispose();
      expect((await disposed.result()).stats.stopReason).toBe("abort");
      expect((await codeOf(() => deadEnd.result())).code).toBe("ERR_GRAMMAR_DEAD_END");
      const kept = await Promise.all(keep.map((g) => g.result()));
      expect(kept.map((r) => r.tokens)).toEqual(expected.map((r) => r.tokens));
      // The aborted and dead-ended sequences generate again at once.
      expect((await s[0]!.generate(prompts[0]!, { maxTokens: 3 }).result()).tokens.length).toBeGreaterThan(0);
      expect((await s[2]!.generate(prompts[2]!, { maxTokens: 3 }).result()).tokens.length).toBeGreaterThan(0);
    });
  });

  it("1,000 random abort/dispose interleavings across 4 sequences: no crash, no hang, no leaked sequence", async () => {
    await withContext({ contextSize: 256, sequences: 4, batchSize: 64 }, async (c) => {
      let seed = 12345;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed % n;
      };
      const slots: Array<{ seq: Sequence | null; pending: Promise<unknown> | null; gen: ReturnType<Sequence["generate"]> | null }> =
        Array.from({ length: 4 }, () => ({ seq: null, pending: null, gen: null }));
      const ends = new Map<string, number>();
      let ops = 0;
      while (ops < 1000) {
        const slot = slots[rand(4)]!;
        ops++;
        switch (rand(5)) {
          case 0:
          case 1: {
            // start (taking a sequence when needed)
            slot.seq ??= c.getSequence();
            if (slot.seq.busy) break;
            const gen = slot.seq.generate(prompts[rand(8)]!, { maxTokens: 1 + rand(24), temperature: 1, seed: rand(1000) });
            slot.gen = gen;
            slot.pending = gen.result().then(
              (r) => ends.set(r.stats.stopReason, (ends.get(r.stats.stopReason) ?? 0) + 1),
              (e: unknown) => {
                throw e;
              },
            );
            break;
          }
          case 2:
            slot.gen?.abort();
            break;
          case 3:
            slot.seq?.dispose();
            slot.seq = null;
            break;
          case 4:
            // let the loop run a little
            await new Promise((r) => setTimeout(r, rand(3)));
            break;
        }
      }
      await Promise.all(slots.map((s) => s.pending));
      for (const s of slots) s.seq?.dispose();
      expect(c.sequencesInUse).toBe(0);
      // Every sequence is free and works.
      const all = Array.from({ length: 4 }, () => c.getSequence());
      const results = await Promise.all(all.map((s, i) => s.generate(prompts[i]!, { maxTokens: 4, temperature: 0 }).result()));
      for (const r of results) expect(r.tokens.length).toBeGreaterThan(0);
      expect((ends.get("abort") ?? 0) + (ends.get("length") ?? 0) + (ends.get("eog") ?? 0)).toBeGreaterThan(50);
    });
  }, 300_000);

  it("no starvation: with 8 sequences every one gets a token every step; with a batch of 8 shared with prompts, all finish", async () => {
    await withContext({ contextSize: 256, sequences: 8 }, async (c) => {
      const seqs = prompts.map(() => c.getSequence());
      const results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i]!, { maxTokens: 32, temperature: 1, seed: i, stopTokens: [] }).result()));
      for (const r of results) {
        expect(r.stats.stalledSteps).toBe(0);
        expect(r.stats.generatedTokens).toBe(r.tokens.length);
      }
    });
    // A batch of 8: while prompts wait, a quarter of it goes to them, so generating sequences
    // take turns for the rest.
    await withContext({ contextSize: 256, sequences: 8, batchSize: 8 }, async (c) => {
      const seqs = prompts.map(() => c.getSequence());
      const results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i]!, { maxTokens: 24, temperature: 0 }).result()));
      const expected = await Promise.all(prompts.map((p) => alone(p, { maxTokens: 24, temperature: 0 })));
      for (let i = 0; i < 8; i++) {
        expect(results[i]!.tokens).toEqual(expected[i]!.tokens);
        // Turns are taken in rotation only while prompts wait (a few steps).
        expect(results[i]!.stats.stalledSteps).toBeLessThanOrEqual(prompts.length * 2);
      }
    });
  }, 120_000);
});

describe("a full sequence", () => {
  it("a prompt that does not fit is ERR_CONTEXT_FULL before anything is decoded", async () => {
    await withContext({ contextSize: 256, sequences: 2 }, async (c) => {
      const s = c.getSequence();
      const tooLong = new Int32Array(s.contextSize).fill(prompts[0]![0]!);
      expect((await codeOf(() => s.generate(tooLong))).code).toBe("ERR_CONTEXT_FULL");
      expect(s.tokens.length).toBe(0);
      expect(s.busy).toBe(false);
    });
  });

  it("a generation that fills its sequence stops with context_full; the other sequence is unaffected", async () => {
    await withContext({ contextSize: 256, sequences: 2 }, async (c) => {
      const [a, b] = [c.getSequence(), c.getSequence()];
      const [ra, rb] = await Promise.all([
        a.generate(prompts[0]!, { temperature: 1, seed: 5, grammar: endless }).result(),
        b.generate(prompts[1]!, { maxTokens: 10, temperature: 0 }).result(),
      ]);
      expect(ra.stats.stopReason).toBe("context_full");
      // Every cell holds a token; the last emitted token did not fit.
      expect(a.tokens.length).toBe(a.contextSize);
      expect(ra.tokens.length).toBe(a.contextSize - prompts[0]!.length + 1);
      expect(rb.tokens).toEqual((await alone(prompts[1]!, { maxTokens: 10, temperature: 0 })).tokens);
      // The full sequence generates again from a new prompt (the prefix reuse trims the cache).
      expect((await a.generate(prompts[2]!, { maxTokens: 3 }).result()).tokens.length).toBe(3);
    });
  });

  it("contextShift keeps going past the size: the first `keep` tokens stay, old ones go", async () => {
    await withContext({ contextSize: 256, contextShift: { keep: 2 } }, async (c) => {
      const r = await c.generate(prompts[0]!, { maxTokens: 600, temperature: 1, seed: 8, grammar: endless }).result();
      expect(r.stats.stopReason).toBe("length");
      expect(r.tokens.length).toBe(600);
      expect(r.stats.shifts).toBeGreaterThan(1);
      const cached = c.tokens;
      expect(cached.length).toBeLessThanOrEqual(c.contextSize);
      expect(Array.from(cached.slice(0, 2))).toEqual(Array.from(prompts[0]!.slice(0, 2)));
      // The cache ends with the generated tokens (all but the last, never decoded).
      expect(Array.from(cached.slice(-10))).toEqual(r.tokens.slice(-11, -1));
    });
  });

  it("contextShift per generation overrides the context's default; bad values are TypeErrors", async () => {
    await withContext({ contextSize: 256 }, async (c) => {
      expect(() => c.generate(prompts[0]!, { contextShift: "yes" as never })).toThrow(TypeError);
      expect(() => c.generate(prompts[0]!, { contextShift: { keep: -1 } })).toThrow(RangeError);
      const r = await c.generate(prompts[0]!, { maxTokens: 400, temperature: 1, seed: 8, contextShift: true, grammar: endless }).result();
      expect(r.stats.shifts).toBeGreaterThan(0);
      expect(r.tokens.length).toBe(400);
      const off = await c.generate(prompts[0]!, { maxTokens: 400, temperature: 1, seed: 8, contextShift: false, grammar: endless }).result();
      expect(off.stats.stopReason).toBe("context_full");
    });
    expect(() => model.createContext({ contextShift: { nope: 1 } as never })).toThrow(TypeError);
  });
});
