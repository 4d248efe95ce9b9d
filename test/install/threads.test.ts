// Electron runs llamapeg in its main process (Node) or in a utility process (a forked child with
// an IPC channel); apps also put it in worker threads. The loader and the addon must work in each,
// with the same backends and the same greedy tokens as a plain process.
import { fork, spawnSync } from "node:child_process";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const probe = join(import.meta.dirname, "fixtures", "probe.mjs");
let modelPath: string;
const env = { ...process.env, OMP_WAIT_POLICY: "passive" };

interface Probe {
  ok: boolean;
  message?: string;
  tokens?: number[];
  thread?: string;
  forked?: boolean;
  info?: { backend: string; cpuVariant: string; binary: { path: string } };
}

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
});

function plain(): Probe {
  const r = spawnSync(process.execPath, [probe, packageRoot, modelPath], { encoding: "utf8", timeout: 120_000, env });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Probe;
}

function inWorker(): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(probe, { workerData: [packageRoot, modelPath], env });
    worker.once("message", (m: Probe) => resolve(m));
    worker.once("error", reject);
  });
}

function forked(): Promise<{ probe: Probe; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = fork(probe, [packageRoot, modelPath], { env, stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let message: Probe | undefined;
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("message", (m: Probe) => (message = m));
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (!message) reject(new Error(`no message from the forked child (exit ${code}, ${signal}): ${stderr}`));
      else resolve({ probe: message, code, signal });
    });
  });
}

describe("where the addon runs", () => {
  it("a worker thread and a forked child (an Electron utility process) load it and agree with a plain process", async () => {
    const base = plain();
    expect(base.ok, base.message).toBe(true);
    expect(base.tokens).toHaveLength(8);

    const [w1, w2] = await Promise.all([inWorker(), inWorker()]); // two at once: backends load once per process
    for (const w of [w1, w2]) {
      expect(w.ok, w.message).toBe(true);
      expect(w.thread).toBe("worker");
      expect(w.tokens).toEqual(base.tokens);
      expect(w.info!.backend).toBe(base.info!.backend);
      expect(w.info!.cpuVariant).toBe(base.info!.cpuVariant);
    }

    const f = await forked();
    expect(f.signal).toBeNull();
    expect(f.code).toBe(0);
    expect(f.probe.ok, f.probe.message).toBe(true);
    expect(f.probe.forked).toBe(true);
    expect(f.probe.tokens).toEqual(base.tokens);
    expect(f.probe.info!.binary.path).toBe(base.info!.binary.path);
  });
});
