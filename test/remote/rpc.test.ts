// One model over ggml RPC: an rpc-server (built from the vendored tree, on 127.0.0.1) takes the
// offloaded layers of loadModel(path, {rpcServers}); greedy generation gives the tokens a local
// model gives. Bad endpoints are coded errors, never a crash (ggml's RPC client would abort).
import { createServer, type Server } from "node:net";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import { loadModel, setLogger, type Model } from "../../lib/llama/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { freePort, startRpcServer, type Proc } from "./processes.js";

// LLAMAPEG_RPC=0 builds the addon without ggml's RPC backend: then there is nothing to test, and
// the skip says so. Any other build must pass.
const rpcBuilt = process.env.LLAMAPEG_RPC !== "0" && process.env.LLAMAPEG_RPC !== "OFF";

let modelPath: string;
let rpc: (Proc & { endpoint: string }) | undefined;

// The first run builds llama-server and rpc-server (scripts/llama-tools.mjs): minutes, more on a
// loaded machine. Later runs find them cached.
const BUILD_TIMEOUT = 45 * 60_000;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
  if (rpcBuilt) rpc = await startRpcServer({ threads: 1 });
}, BUILD_TIMEOUT);

afterAll(async () => {
  await rpc?.kill();
});

async function greedy(model: Model, n: number): Promise<number[]> {
  const context = model.createContext({ contextSize: 512, threads: 1 });
  try {
    const prompt = model.tokenize("<|im_start|>user\nHello over the network<|im_end|>\n<|im_start|>assistant\n", { addSpecial: true, parseSpecial: true });
    const result = await context.generate(prompt, { temperature: 0, maxTokens: n }).result();
    return result.tokens;
  } finally {
    context.dispose();
  }
}

async function codeOf(fn: () => Promise<unknown>): Promise<LlamapegError> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LlamapegError);
    return error as LlamapegError;
  }
  throw new Error("expected an error");
}

describe.skipIf(!rpcBuilt)("loadModel({rpcServers})", () => {
  it("the layers go to the rpc-server's device; greedy tokens equal the local model's", async () => {
    const local = await loadModel(modelPath);
    const expected = await greedy(local, 32);
    local.dispose();

    const lines: string[] = [];
    setLogger((_level, text) => lines.push(text), { level: "info" });
    let remote: Model;
    try {
      remote = await loadModel(modelPath, { rpcServers: [rpc!.endpoint] });
    } finally {
      setLogger(null);
    }
    try {
      // llama.cpp names the devices it uses; the RPC device carries the endpoint.
      expect(lines.join("")).toMatch(new RegExp(`using device RPC\\d+ \\(${rpc!.endpoint.replace(/\./g, "\\.")}\\)`));
      expect(lines.join("")).toMatch(/offloaded \d+\/\d+ layers to GPU/);
      expect(await greedy(remote, 32)).toEqual(expected);
    } finally {
      remote.dispose();
    }
    // Disposed, the endpoint is free again: a second model connects (and is checked) anew.
    const again = await loadModel(modelPath, { rpcServers: [rpc!.endpoint] });
    expect(await greedy(again, 8)).toEqual(expected.slice(0, 8));
    again.dispose();
  });

  it("an endpoint with nothing listening: ERR_MODEL_LOAD naming it, the process lives", async () => {
    const port = await freePort();
    const e = await codeOf(() => loadModel(modelPath, { rpcServers: [`127.0.0.1:${port}`] }));
    expect(e.code).toBe("ERR_MODEL_LOAD");
    expect(e.message).toContain(`127.0.0.1:${port}`);
    expect(e.message).toMatch(/cannot connect/);
  });

  it("something that is not an rpc-server: ERR_MODEL_LOAD", async () => {
    // Answers every connection with an HTTP error and closes it.
    const server: Server = createServer((s) => s.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const e = await codeOf(() => loadModel(modelPath, { rpcServers: [`127.0.0.1:${port}`] }));
      expect(e.code).toBe("ERR_MODEL_LOAD");
      expect(e.message).toMatch(/not an rpc-server/);
    } finally {
      server.close();
    }
  });

  it("bad rpcServers values: ERR_INVALID_ARGUMENT naming the entry", async () => {
    for (const [value, where] of [
      ["127.0.0.1", "rpcServers[0]"],
      [":50052", "rpcServers[0]"],
      ["host:99999", "rpcServers[0]"],
      [42, "rpcServers[0]"],
    ] as const) {
      const e = await codeOf(() => loadModel(modelPath, { rpcServers: [value as string] }));
      expect(e.code).toBe("ERR_INVALID_ARGUMENT");
      expect(e.where).toBe(where);
    }
    const twice = await codeOf(() => loadModel(modelPath, { rpcServers: ["a:1", "a:1"] }));
    expect(twice.where).toBe("rpcServers[1]");
    const vocab = await codeOf(() => loadModel(modelPath, { rpcServers: ["a:1"], vocabOnly: true }));
    expect(vocab.where).toBe("rpcServers");
  });
});
