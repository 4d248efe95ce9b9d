// The package as a user gets it: packed, installed from the tarball into an empty project with no
// compiler, cmake, make, ninja or git on PATH, then `npx llamapeg chat`. The platform package is
// made from this run's own build (scripts/prebuild.mjs --from-build: no compile), or is the
// tarball LLAMAPEG_PREBUILT_TARBALL names (a real portable prebuild, for the footprint figure).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import { minimalPath, npm, packageSizes, sizeOf, which, writeProject } from "./project.js";

const work = mkdtempSync(join(tmpdir(), "llamapeg-install-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const project = join(work, "project");
const cache = join(work, "cache");
let env: NodeJS.ProcessEnv;
let installMs = 0;
let installOutput = "";
let mainTarball = "";
let platformTarball = "";

function run(script: string, args: string[]): string {
  const r = spawnSync(process.execPath, [join(packageRoot, "scripts", script), ...args], { cwd: packageRoot, encoding: "utf8", timeout: 300_000 });
  if (r.status !== 0) throw new Error(`${script} ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout.trim();
}

beforeAll(() => {
  let platform = process.env.LLAMAPEG_PREBUILT_TARBALL;
  if (!platform) {
    const made = JSON.parse(run("prebuild.mjs", ["--from-build", join(packageRoot, "build", "Release"), "--out", join(work, "platform"), "--pack"])) as { tarball: string }[];
    platform = made[0]!.tarball;
  }
  // the published package lists every platform package; this one only those the test has
  const key = /^llamapeg-(.+)-\d+\.\d+\.\d+.*\.tgz$/.exec(basename(platform))![1]!;
  mainTarball = run("prebuild.mjs", ["--main", "--out", work, "--platforms", key]).split("\n").pop()!;
  platformTarball = platform;
  writeProject(project, packageRoot, { main: mainTarball, platform });
  const bin = minimalPath(join(work, "bin"));
  env = {
    HOME: process.env.HOME,
    PATH: bin,
    XDG_CACHE_HOME: cache, // the user's cache folder: test models go here, never into node_modules
    npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? "", ".npm"),
    OMP_WAIT_POLICY: "passive",
  };
  const started = Date.now();
  const r = npm(["ci", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"], project, env);
  installMs = Date.now() - started;
  installOutput = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0) throw new Error(`npm ci failed (${r.status}):\n${installOutput}`);
}, 600_000);

describe("installed from the packed tarball", () => {
  it("has no compiler to use, and the install compiled nothing", () => {
    for (const tool of ["cc", "c++", "g++", "gcc", "clang++", "cmake", "make", "ninja", "git"]) expect(which(tool, env.PATH), tool).toBeUndefined();
    const pkg = join(project, "node_modules", "llamapeg");
    expect(installOutput).toMatch(/using @llamapeg\/[a-z0-9-]+; nothing to build/);
    expect(existsSync(join(pkg, "build")), "no build/ in the package").toBe(false);
    expect(existsSync(join(pkg, "vendor", "llama.cpp")), "no llama.cpp sources fetched").toBe(false);
    console.log(`[install] npm ci of the two tarballs: ${(installMs / 1000).toFixed(1)} s`);
  });

  it("`npx llamapeg chat --prompt hi --max-tokens 8` streams an answer and exits 0", async () => {
    const chunks: { at: number; text: string }[] = [];
    let stderr = "";
    const started = Date.now();
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn("npx", ["llamapeg", "chat", "--prompt", "hi", "--max-tokens", "8"], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.on("data", (d: Buffer) => chunks.push({ at: Date.now() - started, text: d.toString() }));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.once("error", reject);
      child.once("exit", resolve);
    });
    const out = chunks.map((c) => c.text).join("");
    expect(code, `${out}\n${stderr}`).toBe(0);
    // the demo on the test model: 8 tokens streamed (8 random-weight tokens under the tool-call
    // grammar are mostly its leading whitespace), then the final message and the timing line
    expect(out).toMatch(/"role": "assistant"/);
    expect(stderr).toMatch(/generated 8 tokens [0-9.]+ tok\/s/);
    expect(stderr).not.toMatch(/ERR_|Error/);
    console.log(`[install] chat: ${chunks.length} stdout writes over ${chunks.at(-1)!.at} ms`);
    // the model was written to the user's cache, not into the package
    const models = join(cache, "llamapeg", "models");
    expect(readdirSync(models).some((f) => f.endsWith(".gguf"))).toBe(true);
    expect(existsSync(join(project, "node_modules", "llamapeg", ".cache"))).toBe(false);
  });

  it("streams: with --json --stream a tool call arrives in many chunks (32 tokens: past the leading whitespace)", () => {
    const args = ["llamapeg", "chat", "--prompt", "hi", "--max-tokens", "32", "--seed", "1", "--json", "--stream"];
    const r = spawnSync("npx", args, { cwd: project, env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    type Chunk = { choices: { delta: { tool_calls?: unknown[] }; finish_reason: string | null }[] };
    const chunks = r.stdout.split("\n").filter((l) => l.includes('"chat.completion.chunk"')).map((l) => JSON.parse(l) as Chunk);
    expect(chunks.filter((c) => c.choices[0]!.delta.tool_calls).length).toBeGreaterThan(2);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toMatch(/^(length|tool_calls)$/);
  });

  it("needs no install script: with scripts off (pnpm >= 10, --ignore-scripts) the prebuilt loads", () => {
    const quiet = join(work, "no-scripts");
    writeProject(quiet, packageRoot, { main: mainTarball, platform: platformTarball });
    const r = npm(["ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], quiet, env);
    expect(r.status, r.stderr).toBe(0);
    const probe = "import('llamapeg').then((m) => console.log(JSON.stringify(m.systemInfo().binary)))";
    const p = spawnSync("node", ["--input-type=module", "-e", probe], { cwd: quiet, env, encoding: "utf8", timeout: 60_000 });
    expect(p.status, p.stderr).toBe(0);
    expect(JSON.parse(p.stdout)).toMatchObject({ source: "package", package: expect.stringMatching(/^@llamapeg\//) });
  });

  it("without a platform package it builds from source, and a missing compiler is one message naming the tools and the fix", () => {
    const bare = join(work, "bare");
    writeProject(bare, packageRoot, { main: mainTarball });
    const r = npm(["ci", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"], bare, env);
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status).not.toBe(0);
    expect(out).toMatch(/no prebuilt binary for [a-z0-9-]+ is installed: building from source/);
    expect(out).toMatch(/cannot build llamapeg from source for [a-z0-9-]+: cmake \(>= 3\.19\), a C\+\+17 compiler .* not on PATH\. Install: /);
  });

  it("the test-model writer works from node_modules (its tokenizer and template ship in assets/)", () => {
    const out = join(work, "written.gguf");
    const script = join(project, "node_modules", "llamapeg", "scripts", "make-test-model.mjs");
    const r = spawnSync("node", [script, "--out", out, "--n-embd", "32", "--n-layer", "1", "--n-ff", "64"], { cwd: project, env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(statSync(out).size).toBeGreaterThan(1e6);
  });

  it("reports the installed size", () => {
    const nodeModules = join(project, "node_modules");
    const total = sizeOf(nodeModules);
    const sizes = Object.entries(packageSizes(nodeModules)).sort((a, b) => b[1] - a[1]);
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    console.log(`[install] node_modules: ${mb(total)}; ${sizes.slice(0, 6).map(([n, s]) => `${n} ${mb(s)}`).join(", ")}`);
    expect(total).toBeGreaterThan(0);
    expect(statSync(join(nodeModules, "llamapeg", "assets", "ggml-vocab-qwen2.gguf.br")).size).toBeLessThan(2e6);
  });
});
