/**
 * llama-server and rpc-server processes for the remote tests, on 127.0.0.1: built on demand by
 * scripts/llama-tools.mjs (cached), started on free ports, waited for, and killed at the end.
 * A process that exits early or never becomes ready fails the test with its log tail.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

import { probeRpcServer } from "../../lib/llama/rpc-probe.js";

import { ensureLlamaTools, type LlamaTools } from "../../scripts/llama-tools.mjs";

let tools: Promise<LlamaTools> | undefined;

/** Builds (or finds cached) llama-server and rpc-server once per test process. */
export function llamaTools(): Promise<LlamaTools> {
  tools ??= ensureLlamaTools();
  return tools;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Every process started here: killed when this test process exits, however it exits. */
const started = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

export class Proc {
  readonly child: ChildProcess;
  readonly name: string;
  log = "";
  exited: Promise<number | null>;

  constructor(name: string, command: string, args: string[]) {
    this.name = name;
    this.child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    const keep = (b: Buffer) => {
      this.log = (this.log + b.toString("utf8")).slice(-8_000);
    };
    this.child.stdout!.on("data", keep);
    this.child.stderr!.on("data", keep);
    started.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code) => {
        started.delete(this.child);
        resolve(code);
      }),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILL: the process dies at once, mid-stream if it was streaming. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill("SIGKILL");
    await this.exited;
  }

  tail(): string {
    return this.log.split("\n").slice(-30).join("\n");
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface LlamaServerProc extends Proc {
  url: string;
}

/** Starts llama-server on the model and resolves once /health answers 200. */
export async function startLlamaServer(model: string, o: { contextSize: number; parallel: number; threads: number; extra?: string[] }): Promise<LlamaServerProc> {
  const { llamaServer } = await llamaTools();
  const port = await freePort();
  const args = ["-m", model, "--host", "127.0.0.1", "--port", String(port), "-c", String(o.contextSize), "-np", String(o.parallel), "-t", String(o.threads), "--no-webui", "--no-warmup", ...(o.extra ?? [])];
  const p = new Proc(`llama-server:${port}`, llamaServer, args) as LlamaServerProc;
  p.url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (!p.running) throw new Error(`${p.name} exited (${p.child.exitCode}) before it was ready:\n${p.tail()}`);
    try {
      const res = await fetch(`${p.url}/health`);
      if (res.status === 200) return p;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await p.kill();
      throw new Error(`${p.name} was not ready within 120 s:\n${p.tail()}`);
    }
    await sleep(100);
  }
}

/** Starts rpc-server (CPU device) and resolves once it answers the RPC handshake. */
export async function startRpcServer(o: { threads: number }): Promise<Proc & { endpoint: string }> {
  const { rpcServer } = await llamaTools();
  const port = await freePort();
  const p = new Proc(`rpc-server:${port}`, rpcServer, ["--host", "127.0.0.1", "--port", String(port), "-t", String(o.threads)]) as Proc & { endpoint: string };
  p.endpoint = `127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (!p.running) throw new Error(`${p.name} exited (${p.child.exitCode}) before it listened:\n${p.tail()}`);
    try {
      await probeRpcServer(p.endpoint, 2_000);
      return p;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await p.kill();
      throw new Error(`${p.name} did not answer within 30 s:\n${p.tail()}`);
    }
    await sleep(100);
  }
}
