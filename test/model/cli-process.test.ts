// The `llamapeg` executable (dist/cli/main.js, built by `npm run build:ts`) as a user runs it:
// exit statuses, a prompt piped on stdin, plain text (no ANSI) when the output is not a terminal.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import type { ChatCompletion } from "../../lib/openai/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const bin = join(packageRoot, "dist", "cli", "main.js");
const env = { ...process.env, OMP_WAIT_POLICY: "passive" };

function llamapeg(args: string[], input = "") {
  return spawnSync(process.execPath, [bin, ...args], { input, encoding: "utf8", timeout: 120_000, env });
}

beforeAll(async () => {
  await ensureTestModel("tiny");
});

describe("exit statuses", () => {
  it("0 for help and --version, 2 for usage errors, 1 for a bad --tools file (one line, no stack)", () => {
    expect(llamapeg(["--version"]).status).toBe(0);
    expect(llamapeg(["help", "analyze"]).stdout).toMatch(/^llamapeg analyze/);
    const unknown = llamapeg(["frobnicate"]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
    const flag = llamapeg(["chat", "--temperature", "hot"]);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(/--temperature must be a number/);
    const dir = mkdtempSync(join(tmpdir(), "llamapeg-cli-"));
    const tools = join(dir, "tools.json");
    writeFileSync(tools, '[{"type": "function", "function": {"name": "f"}}');
    const bad = llamapeg(["chat", "--tools", tools, "--prompt", "hi"]);
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split("\n")).toEqual([`llamapeg: --tools ${tools}:1:49: expected ',' or ']' [ERR_INVALID_ARGUMENT]`]);
  });

  it("a missing model exits 1", () => {
    const r = llamapeg(["chat", "--model", "/nonexistent/model.gguf", "--prompt", "hi"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/ERR_MODEL_NOT_FOUND/);
  });
});

describe("standard input and plain output", () => {
  it("a piped prompt is the prompt (same prompt tokens as --prompt); no ANSI codes on a pipe", () => {
    const args = ["chat", "--tools", "none", "--max-tokens", "4", "--seed", "1", "--threads", "2"];
    const short = llamapeg([...args, "--json"], "Tell me about Paris\n");
    expect(short.status, short.stderr).toBe(0);
    const longer = llamapeg([...args, "--json"], "Tell me about Paris and about Tokyo and about Lima\n");
    const flag = llamapeg([...args, "--json", "--prompt", "Tell me about Paris"]);
    const tokens = (r: { stdout: string }) => (JSON.parse(r.stdout) as ChatCompletion).usage.prompt_tokens;
    expect(tokens(short)).toBe(tokens(flag));
    expect(tokens(longer)).toBeGreaterThan(tokens(short));
    const human = llamapeg(["chat", "--max-tokens", "40", "--seed", "2", "--threads", "2"], "Weather in Paris?");
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/→ (get_weather|search_web)\(/);
    expect(human.stdout + human.stderr).not.toMatch(/\x1b\[/);
  });

  it("analyze prints the model's size from its tensors, not llama.cpp's '?B'", async () => {
    const r = llamapeg(["analyze", await ensureTestModel("tiny")]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^model\s+qwen2 · 19\.5M parameters · F16 · 37\.3 MiB$/m);
    expect(r.stdout).not.toContain("?B");
  });
});

describe("llamapeg serve", () => {
  it("prints its URL, answers, and exits 0 on SIGTERM; a public host without a key exits 1", async () => {
    const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--threads", "2"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = once(child, "exit");
    try {
      for (let i = 0; i < 600 && !/\/v1\n/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
      const url = out.trim();
      expect(url, err).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const models = (await (await fetch(`${url}/models`)).json()) as { data: { id: string }[] };
      expect(models.data).toHaveLength(1);
      const c = await fetch(`${url}/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 4 }) });
      expect(c.status).toBe(200);
    } finally {
      child.kill("SIGTERM");
    }
    const [code] = await exited;
    expect(code, err).toBe(0);
    expect(err).toMatch(/POST \/v1\/chat\/completions 200/);
    expect(err).toMatch(/shutting down/);

    const open = llamapeg(["serve", "--host", "0.0.0.0", "--port", "0"]);
    expect(open.status).toBe(1);
    expect(open.stderr).toMatch(/^llamapeg: host: 0\.0\.0\.0 is reachable from other machines; set an API key/m);
  });
});
