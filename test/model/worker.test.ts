// The addon keeps its state per environment: it loads and generates inside worker_threads, and a
// worker terminated mid-generation takes its generation down without touching the main thread.
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";

import { loadModel } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const script = join(import.meta.dirname, "fixtures", "worker-generate.mjs");
let modelPath: string;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
});

function runWorker(hang: boolean): { worker: Worker; message: Promise<Record<string, unknown>> } {
  const worker = new Worker(script, { workerData: { root: packageRoot, modelPath, hang } });
  const message = new Promise<Record<string, unknown>>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return { worker, message };
}

describe("worker_threads", () => {
  it("loads a model and generates inside a worker, same tokens as the main thread", async () => {
    const { worker, message } = runWorker(false);
    const result = (await message) as { tokens: number[]; stopReason: string };
    await worker.terminate();
    expect(result.tokens.length).toBeGreaterThan(0);

    const model = await loadModel(modelPath);
    const context = model.createContext({ contextSize: 256, threads: 1 });
    const here = await context.generate(model.tokenize("Hello from a worker"), { maxTokens: 8, temperature: 0 }).result();
    model.dispose();
    expect(result.tokens).toEqual(here.tokens);
  });

  it("two workers at once, then terminating one mid-generation leaves the process healthy", async () => {
    const a = runWorker(false);
    const b = runWorker(true);
    const [ra, rb] = await Promise.all([a.message, b.message]);
    expect((ra as { tokens: number[] }).tokens.length).toBeGreaterThan(0);
    expect(rb).toEqual({ started: true });
    const code = await b.worker.terminate();
    await a.worker.terminate();
    expect(typeof code).toBe("number");
    const model = await loadModel(modelPath, { vocabOnly: true });
    expect(model.tokenize("still alive").length).toBeGreaterThan(0);
    model.dispose();
  });
});
