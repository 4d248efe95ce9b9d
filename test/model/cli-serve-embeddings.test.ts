// `llamapeg serve --embeddings` (dist/cli/main.js, built by `npm run build:ts`): the served model
// answers POST /v1/embeddings; without the flag the route answers 501.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const bin = join(packageRoot, "dist", "cli", "main.js");
const env = { ...process.env, OMP_WAIT_POLICY: "passive" };

beforeAll(async () => {
  await ensureTestModel("tiny");
});

async function serve(args: string[], fn: (url: string) => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--threads", "1", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = once(child, "exit");
  try {
    for (let i = 0; i < 600 && !/\/v1\n/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out.trim(), err).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    await fn(out.trim());
  } finally {
    child.kill("SIGTERM");
  }
  const [code] = await exited;
  expect(code, err).toBe(0);
}

describe("llamapeg serve --embeddings", () => {
  it("serves /v1/embeddings with the flag, 501 without", async () => {
    const post = (url: string) => fetch(`${url}/embeddings`, { method: "POST", body: JSON.stringify({ input: ["a", "b c"], encoding_format: "float" }) });
    await serve(["--embeddings"], async (url) => {
      const r = await post(url);
      expect(r.status).toBe(200);
      const body = (await r.json()) as { data: { embedding: number[] }[] };
      expect(body.data.map((d) => d.embedding.length)).toEqual([64, 64]);
    });
    await serve([], async (url) => expect((await post(url)).status).toBe(501));
  });
});
