// Generation on the tiny random-weight model: streaming pieces, determinism, stop conditions,
// KV prefix reuse, cancellation, and misuse (busy, disposed) as clear errors.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf, collect, concatPieces, text } from "./helpers.js";

let model: Model;
let context: Context;
let prompt: Int32Array;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterEach(() => {
  // A test that failed or timed out may leave a generation running: start the next one clean.
  if (context.busy) {
    context.dispose();
    context = model.createContext({ contextSize: 512, threads: 2 });
  }
});

afterAll(() => {
  model?.dispose();
});

describe("generate", () => {
  it("streams tokens whose pieces concatenate to detokenize()", async () => {
    const generation = context.generate(prompt, { maxTokens: 40, seed: 7 });
    const items = await collect(generation);
    expect(items.length).toBeGreaterThan(0);
    const ids = items.map((i) => i.token);
    expect(Buffer.from(concatPieces(items)).toString("utf8")).toBe(model.detokenize(ids));
    for (const item of items) expect(Array.from(item.piece)).toEqual(Array.from(model.tokenPiece(item.token)));
    const stats = generation.stats!;
    expect(stats.generatedTokens).toBe(items.length);
    expect(stats.promptTokens).toBe(prompt.length);
    expect(["eog", "length"]).toContain(stats.stopReason);
    if (stats.stopReason === "length") expect(items.length).toBe(40);
    expect(stats.generateMs).toBeGreaterThanOrEqual(stats.sampleMs);
  });

  it("same seed, same output; greedy is deterministic", async () => {
    const a = await context.generate(prompt, { maxTokens: 30, seed: 1234, temperature: 1 }).result();
    const b = await context.generate(prompt, { maxTokens: 30, seed: 1234, temperature: 1 }).result();
    expect(b.tokens).toEqual(a.tokens);
    const g1 = await context.generate(prompt, { maxTokens: 30, temperature: 0 }).result();
    const g2 = await context.generate(prompt, { maxTokens: 30, temperature: 0, seed: 99 }).result();
    expect(g2.tokens).toEqual(g1.tokens);
    // Different seeds at a high temperature take different paths on random weights.
    const seeds = await Promise.all([1, 2, 3].map(async (seed) => {
      const c = model.createContext({ contextSize: 256, threads: 1 });
      try {
        return (await c.generate(prompt, { maxTokens: 20, seed, temperature: 1.5 }).result()).tokens.join(",");
      } finally {
        c.dispose();
      }
    }));
    expect(new Set(seeds).size).toBeGreaterThan(1);
  });

  it("maxTokens: 0 generates nothing; result() gives tokens, text and stats", async () => {
    const none = await context.generate(prompt, { maxTokens: 0 }).result();
    expect(none.tokens).toEqual([]);
    expect(none.stats.stopReason).toBe("length");
    const some = await context.generate(prompt, { maxTokens: 5, temperature: 0 }).result();
    expect(some.tokens.length).toBeLessThanOrEqual(5);
    expect(some.text).toBe(model.detokenize(some.tokens));
  });

  it("stopTokens end the generation without emitting the stop token", async () => {
    const free = await context.generate(prompt, { maxTokens: 20, temperature: 0 }).result();
    expect(free.tokens.length).toBeGreaterThan(4);
    const k = free.tokens.findIndex((t, i) => i >= 2 && free.tokens.indexOf(t) === i);
    const stop = free.tokens[k]!;
    const stopped = await context.generate(prompt, { maxTokens: 20, temperature: 0, stopTokens: [stop] }).result();
    expect(stopped.stats.stopReason).toBe("stop");
    expect(stopped.stats.stopToken).toBe(stop);
    expect(stopped.tokens).toEqual(free.tokens.slice(0, k));
  });

  it("reuses the KV prefix: an extended prompt decodes only the new tokens, same output as a fresh context", async () => {
    context.clearCache();
    const first = await context.generate(prompt, { maxTokens: 8, temperature: 0 }).result();
    const cached = context.tokens;
    // The cache holds the prompt and every generated token but the last (never decoded).
    expect(Array.from(cached)).toEqual([...prompt, ...first.tokens.slice(0, -1)]);
    const more = model.tokenize("<|im_end|>\n<|im_start|>user\nAnd again<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
    const next = Int32Array.from([...cached, ...more]);
    const reused = await context.generate(next, { maxTokens: 12, temperature: 0 }).result();
    expect(reused.stats.reusedTokens).toBe(cached.length);
    expect(reused.stats.promptTokens - reused.stats.reusedTokens).toBe(more.length);

    const fresh = model.createContext({ contextSize: 512, threads: 2 });
    try {
      const expected = await fresh.generate(next, { maxTokens: 12, temperature: 0 }).result();
      expect(expected.stats.reusedTokens).toBe(0);
      expect(reused.tokens).toEqual(expected.tokens);
    } finally {
      fresh.dispose();
    }
  });

  it("a prompt that is entirely cached re-decodes only its last token", async () => {
    await context.generate(prompt, { maxTokens: 1, temperature: 0 }).result();
    const again = await context.generate(prompt, { maxTokens: 1, temperature: 0 }).result();
    expect(again.stats.reusedTokens).toBe(prompt.length - 1);
  });
});

describe("cancellation and misuse", () => {
  it("an AbortSignal stops a running generation (stopReason abort); the context stays usable", async () => {
    const controller = new AbortController();
    const generation = context.generate(prompt, { signal: controller.signal, temperature: 1, seed: 3 });
    let n = 0;
    for await (const _ of generation) {
      if (++n === 5) controller.abort();
    }
    expect(generation.stats!.stopReason).toBe("abort");
    expect(n).toBeGreaterThanOrEqual(5);
    const after = await context.generate(prompt, { maxTokens: 3 }).result();
    expect(after.tokens.length).toBeGreaterThan(0);
  });

  it("an already-aborted signal ends at once", async () => {
    const result = await context.generate(prompt, { signal: AbortSignal.abort() }).result();
    expect(result.stats.stopReason).toBe("abort");
  });

  it("breaking out of for-await stops the generation", async () => {
    const generation = context.generate(prompt, { temperature: 1, seed: 5 });
    for await (const _ of generation) break;
    const stats = (await generation.result()).stats;
    expect(stats.stopReason).toBe("abort");
    expect(context.busy).toBe(false);
  });

  it("two generations at once on one context: ERR_BUSY", async () => {
    const running = context.generate(prompt, { maxTokens: 50 });
    expect((await codeOf(() => context.generate(prompt))).code).toBe("ERR_BUSY");
    expect((await codeOf(() => context.tokens)).code).toBe("ERR_BUSY");
    running.abort();
    await running.result();
    expect(context.busy).toBe(false);
  });

  it("disposing the context mid-generation stops it; later use is ERR_DISPOSED", async () => {
    const c = model.createContext({ contextSize: 256 });
    const generation = c.generate(prompt, { temperature: 1, seed: 9 });
    let n = 0;
    for await (const _ of generation) {
      if (++n === 3) c.dispose();
    }
    expect(generation.stats!.stopReason).toBe("abort");
    expect((await codeOf(() => c.generate(prompt))).code).toBe("ERR_DISPOSED");
    expect((await codeOf(() => c.tokens)).code).toBe("ERR_DISPOSED");
    c.dispose();
  });

  it("disposing the model disposes its contexts and stops their generations", async () => {
    const m = await loadModel(model.path);
    const c = m.createContext({ contextSize: 256 });
    const generation = c.generate(m.tokenize("hi"), { temperature: 1, seed: 11 });
    const done = generation.result();
    m.dispose();
    expect((await done).stats.stopReason).toBe("abort");
    expect(c.disposed).toBe(true);
    expect((await codeOf(() => m.tokenize("x"))).code).toBe("ERR_DISPOSED");
  });

  it("a generation nobody reads does not pin the process or the context", async () => {
    const c = model.createContext({ contextSize: 1024 });
    const generation = c.generate(prompt, { temperature: 1, seed: 13 });
    // Let it fill its window and wait for a reader that never comes, then walk away.
    await new Promise((r) => setTimeout(r, 200));
    c.dispose();
    expect((await generation.result()).stats.stopReason).toBe("abort");
  });

  it("rejects bad prompts before native code", async () => {
    expect(() => context.generate([])).toThrow(RangeError);
    expect(() => context.generate([model.vocabSize])).toThrow(RangeError);
    const tooLong = new Int32Array(600).fill(prompt[0]!);
    expect((await codeOf(() => context.generate(tooLong))).code).toBe("ERR_CONTEXT_FULL");
  });

  it("pieces may split a UTF-8 character; text() joins them", async () => {
    const items = await collect(context.generate(prompt, { maxTokens: 60, temperature: 1.2, seed: 21 }));
    expect(text(items)).toBe(model.detokenize(items.map((i) => i.token)));
  });
});
