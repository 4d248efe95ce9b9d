// Thread counts that follow contention (native/threads.h, ContentionGovernor; issue 28.3): while
// other work keeps the cores busy, a 2-thread context decodes on one thread, and back on two
// once the cores are free. Switching must not change what is generated: greedy tokens with the
// switch on, under CPU hogs and without, equal those of a one-thread context. (How much faster it
// is under load: `npm run bench:contention`; timings are no test's business.)
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";

import { afterAll, beforeAll, expect, it } from "vitest";

import type { Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;

beforeAll(async () => {
  model = await loadTestModel();
});

afterAll(() => model?.dispose());

async function greedy(threads: number, env: string): Promise<{ tokens: number[]; contendedSteps: number | undefined }> {
  // read when the context is created
  process.env.LLAMAPEG_ADAPT_THREADS = env;
  const ctx = model.createContext({ contextSize: 256, threads });
  delete process.env.LLAMAPEG_ADAPT_THREADS;
  try {
    const out: number[] = [];
    const generation = ctx.generate(model.tokenize("Once upon a time there was a"), { maxTokens: 24, temperature: 0 });
    for await (const { token } of generation) out.push(token);
    return { tokens: out, contendedSteps: generation.stats?.contendedSteps };
  } finally {
    ctx.dispose();
  }
}

it("switching between one and two threads per decode keeps greedy output the same", async () => {
  const one = await greedy(1, "0");
  const quiet = await greedy(2, "1");
  const hogs: ChildProcess[] = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  let loaded: Awaited<ReturnType<typeof greedy>>;
  let off: Awaited<ReturnType<typeof greedy>>;
  try {
    await new Promise((r) => setTimeout(r, 200));
    loaded = await greedy(2, "1");
    off = await greedy(2, "0");
  } finally {
    for (const h of hogs) h.kill();
  }
  expect(one.tokens.length).toBe(24);
  expect(quiet.tokens).toEqual(one.tokens);
  expect(loaded.tokens).toEqual(one.tokens);
  expect(off.tokens).toEqual(one.tokens);
  // the switch happened under the hogs (after two busy reads), and never when it is off or for
  // a one-thread context (nothing to switch)
  expect(loaded.contendedSteps).toBeGreaterThan(0);
  expect(off.contendedSteps).toBe(0);
  expect(one.contendedSteps).toBe(0);
});
