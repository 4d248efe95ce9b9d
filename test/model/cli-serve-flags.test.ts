// `llamapeg serve` flags that add a second context (dist/cli/main.js, built by `npm run build:ts`):
// `--embeddings`: the served model answers POST /v1/embeddings (without the flag: 501);
// `--draft-model`: requests may ask for speculative {type: "draft"} (without it: 400 naming it).
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

describe("llamapeg serve --draft-model", () => {
  it("a request asking for the draft model's drafts gets them (the same answer); without the flag it is a 400 naming speculative", async () => {
    const model = await ensureTestModel("tiny");
    const body = { messages: [{ role: "user", content: "List the files." }], temperature: 0, max_tokens: 16 };
    const post = (url: string, extra: object) => fetch(`${url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body, ...extra }) });
    let plain = "";
    await serve(["--draft-model", model], async (url) => {
      const a = (await (await post(url, {})).json()) as { choices: { message: { content: string } }[] };
      const r = await post(url, { speculative: { type: "draft", draft_max: 4 } });
      expect(r.status).toBe(200);
      const b = (await r.json()) as { choices: { message: { content: string } }[]; llamapeg: { decoding: { draft_accepted_tokens: number } } };
      expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
      expect(b.llamapeg.decoding.draft_accepted_tokens).toBeGreaterThan(0);
      plain = a.choices[0]!.message.content;
    });
    expect(plain.length).toBeGreaterThan(0);
    await serve([], async (url) => {
      const r = await post(url, { speculative: { type: "draft" } });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { param: string } }).error.param).toBe("speculative");
    });
  });
});
