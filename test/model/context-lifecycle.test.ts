// Lifecycle in child processes (a failure here would otherwise take the test runner down):
// load/dispose cycles give their memory back at once, worker.terminate() at any moment leaves the
// process alive; and tokenizing a large text off the JS thread keeps the event loop running.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

let modelPath: string;
let model: Model;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
  model = await loadModel(modelPath, { vocabOnly: true });
});

afterAll(() => model?.dispose());

function runFixture(name: string, args: string[], timeout: number, nodeArgs: string[] = []) {
  return spawnSync(process.execPath, [...nodeArgs, join(import.meta.dirname, "fixtures", name), packageRoot, modelPath, ...args], {
    encoding: "utf8",
    timeout,
  });
}

describe("lifecycle", () => {
  it("model.dispose() releases the weights at once (no GC); native memory does not pile up over load/dispose cycles", () => {
    // 50 rounds here; 100 rounds measured +3 to +6 MB (docs/bench.md). Before: 45-90 MB per
    // round kept until GC, then steps of ~120 MB from glibc's per-thread arenas. The two RSS
    // figures are medians of settled RSS (after GCs) over the first and the last quarter of rounds.
    const r = runFixture("load-dispose-rss.mjs", ["50"], 540_000, ["--expose-gc"]);
    expect(r.status, r.stderr).toBe(0);
    const m = JSON.parse(r.stdout) as { warmRssMb: number; endRssMb: number; modelMb: number; releasedMb: number };
    expect(m.endRssMb - m.warmRssMb, r.stdout).toBeLessThan(12);
    // The weights (read into memory, no mmap) leave before dispose() returns.
    expect(m.releasedMb, r.stdout).toBeGreaterThan(m.modelMb * 0.8);
  }, 600_000);

  it("worker.terminate() during load and during generation, 30 times: the process lives", () => {
    const r = runFixture("terminate-workers.mjs", ["30"], 540_000);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    const counts = JSON.parse(r.stdout) as { duringLoad: number; duringGeneration: number };
    expect(counts.duringLoad, r.stdout).toBeGreaterThanOrEqual(5);
    expect(counts.duringGeneration, r.stdout).toBeGreaterThanOrEqual(10);
  }, 600_000);

  it("tokenizeAsync: a large text tokenizes off the JS thread (the event loop keeps turning), same ids", async () => {
    const text = "The quick brown fox jumps over the lazy dog. ".repeat(20_000); // 900 kB
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const ids = await model.tokenizeAsync(text);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    expect(Array.from(ids.slice(0, 50))).toEqual(Array.from(model.tokenize(text.slice(0, 450)).slice(0, 50)));
    expect(ids.length).toBe(model.tokenize(text).length);
    // Small texts take the synchronous path; both agree, options included.
    expect(Array.from(await model.tokenizeAsync("<|im_start|>hi", { parseSpecial: true }))).toEqual(Array.from(model.tokenize("<|im_start|>hi", { parseSpecial: true })));
    await expect(model.tokenizeAsync(42 as never)).rejects.toThrow(TypeError);
  });
});
