// The llama-server side of `npm run bench:agent`'s side-by-side: the vendored llama-server
// (scripts/llama-tools.mjs builds and caches it) started with its defaults for agent loops
// (-np 1, --ctx-checkpoints and --checkpoint-min-step at their defaults, cache_prompt on, swa_full
// off), sent the same scripted conversation as ours over /v1/chat/completions.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

import { ensureLlamaTools } from "../llama-tools.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** Starts llama-server on `modelPath`; resolves { url, kill } once /health answers 200. */
export async function startAgentServer(modelPath, { contextSize, batchSize, threads }) {
  const { llamaServer } = await ensureLlamaTools({ standalone: true, log: (m) => process.stderr.write(`[llama-tools] ${m}\n`) });
  const port = await freePort();
  const args = [
    "-m", modelPath, "--host", "127.0.0.1", "--port", String(port), "-c", String(contextSize), "-np", "1",
    "-b", String(batchSize), "-ub", String(batchSize), "-t", String(threads), "-tb", String(threads),
    "--no-webui", "--no-warmup", "--jinja",
  ];
  const child = spawn(llamaServer, args, { stdio: ["ignore", "ignore", "pipe"] });
  let tail = "";
  child.stderr.on("data", (b) => (tail = (tail + b).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const kill = () => new Promise((r) => (child.exitCode !== null ? r() : (child.once("exit", r), child.kill("SIGTERM"))));
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited:\n${tail}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return { url, kill, tail: () => tail };
    } catch {
      // not up yet
    }
    await sleep(100);
  }
  child.kill("SIGKILL");
  throw new Error(`llama-server did not come up:\n${tail}`);
}

/**
 * One chat request; the wall time of a max_tokens 1 request is its time to first token.
 * Returns { ms, prompt, decoded, promptMs } from the server's usage and timings.
 */
export async function serverTurn(url, request) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...request, cache_prompt: true }),
  });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (!res.ok) throw new Error(`llama-server answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
  const t = body.timings ?? {};
  return { ms, prompt: body.usage.prompt_tokens, decoded: t.prompt_n, promptMs: t.prompt_ms };
}
