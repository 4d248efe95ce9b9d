// The loader (lib/native/load.ts): which binaries it picks, how it is forced, what it says when
// nothing fits. Each case runs in a fresh process: the choice is made once per process.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { backendFileName, systemInfo } from "../../lib/native/load.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { codeOf } from "../model/helpers.js";

const probe = join(import.meta.dirname, "fixtures", "probe.mjs");
const release = join(packageRoot, "build", "Release");
const scratch = mkdtempSync(join(tmpdir(), "llamapeg-loader-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let modelPath: string;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
});

interface Probe {
  ok: boolean;
  code?: string;
  message?: string;
  info?: ReturnType<typeof systemInfo>;
  tokens?: number[] | null;
}

function run(env: Record<string, string | undefined>, model = "-", backend?: string): Probe {
  const full: NodeJS.ProcessEnv = { ...process.env, OMP_WAIT_POLICY: "passive" };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete full[k];
    else full[k] = v;
  }
  // the parent's own choices must not leak into a case that does not set them
  for (const k of ["LLAMAPEG_BACKEND", "LLAMAPEG_NATIVE_PATH"]) if (!(k in env)) delete full[k];
  const args = [probe, packageRoot, model, ...(backend ? [backend] : [])];
  const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 120_000, env: full });
  expect(r.signal, r.stderr).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Probe;
}

/** A copy of the build's binaries in a new folder: the folder is relocatable ($ORIGIN). */
function copyBuild(name: string, keep: (file: string) => boolean): string {
  const dir = join(scratch, name);
  rmSync(dir, { recursive: true, force: true });
  spawnSync("mkdir", ["-p", dir]);
  for (const f of readdirSync(release)) if (keep(f)) copyFileSync(join(release, f), join(dir, f));
  return dir;
}
const isCpu = (f: string) => f.startsWith(backendFileName("cpu").replace(/\.[a-z]+$/, ""));
const isCore = (f: string) => f === "llamapeg.node" || /llamapeg-ggml/.test(f);

describe("the loader", () => {
  it("loads this package's build with its CPU backend, and reports what it chose", () => {
    const info = systemInfo();
    expect(info.binary.source).toBe("build");
    expect(info.binary.path).toBe(join(release, "llamapeg.node"));
    expect(info.backends.map((b) => b.name)).toContain("cpu");
    expect(info.devices.find((d) => d.type === "cpu")?.memoryTotal).toBeGreaterThan(0);
    expect(info.memory.total).toBeGreaterThan(0);
    expect(info.cpuVariant.length).toBeGreaterThan(0);
    expect(info.features).toMatch(/CPU :/);
    // no GPU on this machine (a software Vulkan device is not taken by default)
    expect(["cpu", "cuda", "vulkan", "metal"]).toContain(info.backend);
    expect(info.tried.some((t) => t.includes("llamapeg.node: loaded"))).toBe(true);
  });

  it("backend: \"cpu\" gives the default's greedy tokens; an unknown or missing backend is an error that says why", async () => {
    const model = await loadModel(modelPath, { backend: "cpu" });
    model.dispose();
    expect((await codeOf(() => loadModel(modelPath, { backend: "opengl" as "cpu" }))).code).toBe("ERR_INVALID_ARGUMENT");
    const err = await codeOf(() => loadModel(modelPath, { backend: "cuda" }));
    expect(err.code).toBe("ERR_NATIVE_LOAD");
    expect(err.message).toMatch(/cuda backend, which is not available/);
    expect(err.message).toMatch(/npm install @llamapeg\/[a-z0-9-]+-cuda/);
    expect(err.message).toMatch(/Tried:/);
    const forced = run({}, modelPath, "cpu");
    const auto = run({}, modelPath);
    expect(forced.ok, forced.message).toBe(true);
    expect(forced.tokens).toHaveLength(8);
    expect(forced.tokens).toEqual(auto.tokens);
  }, 300_000); // two probe processes, each allowed 120 s (spawnSync blocks past vitest's 60 s default on a loaded machine)

  it("LLAMAPEG_BACKEND forces one: cpu loads no GPU module, a missing one fails with what it tried", () => {
    const cpu = run({ LLAMAPEG_BACKEND: "cpu" });
    expect(cpu.ok, cpu.message).toBe(true);
    expect(cpu.info!.backend).toBe("cpu");
    expect(cpu.info!.tried.some((t) => /^(cuda|vulkan|metal)\b/.test(t))).toBe(false);
    const cuda = run({ LLAMAPEG_BACKEND: "cuda" });
    expect(cuda.ok).toBe(false);
    expect(cuda.code).toBe("ERR_NATIVE_LOAD");
    expect(cuda.message).toMatch(/LLAMAPEG_BACKEND asks for the cuda backend/);
    expect(cuda.message).toMatch(/libggml-cuda|ggml-cuda\.dll/);
    const bogus = run({ LLAMAPEG_BACKEND: "tpu" });
    expect(bogus.code).toBe("ERR_INVALID_ARGUMENT");
    expect(bogus.message).toMatch(/LLAMAPEG_BACKEND must be one of auto, cuda, vulkan, metal, cpu/);
  });

  it("LLAMAPEG_NATIVE_PATH: a relocated copy of the build loads; a wrong path says what it tried and how to fix it", () => {
    const dir = copyBuild("relocated", (f) => isCore(f) || isCpu(f));
    const moved = run({ LLAMAPEG_NATIVE_PATH: dir }, modelPath);
    expect(moved.ok, moved.message).toBe(true);
    expect(moved.info!.binary).toEqual({ path: join(dir, "llamapeg.node"), source: "LLAMAPEG_NATIVE_PATH" });
    expect(moved.info!.backends.find((b) => b.name === "cpu")!.path.startsWith(dir)).toBe(true);
    expect(moved.tokens).toEqual(run({}, modelPath).tokens);

    const missing = run({ LLAMAPEG_NATIVE_PATH: join(scratch, "nowhere") });
    expect(missing.code).toBe("ERR_NATIVE_LOAD");
    expect(missing.message).toMatch(/could not load llamapeg's native addon/);
    expect(missing.message).toMatch(/nowhere[/\\]llamapeg\.node: not found/);
    expect(missing.message).toMatch(/LLAMAPEG_NATIVE_PATH points at/);
  });

  it("a folder without a CPU backend, or with only broken ones, is an error naming the folder and files", () => {
    const bare = copyBuild("no-cpu", isCore);
    const none = run({ LLAMAPEG_NATIVE_PATH: bare });
    expect(none.code).toBe("ERR_NATIVE_LOAD");
    expect(none.message).toMatch(/has no CPU backend/);

    // a variant that is not a loadable library is skipped and named; the real one is chosen
    const mixed = copyBuild("mixed", isCore);
    const real = readdirSync(release).find(isCpu)!;
    copyFileSync(join(release, real), join(mixed, backendFileName("cpu-real")));
    writeFileSync(join(mixed, backendFileName("cpu-broken")), "not a shared library");
    const chosen = run({ LLAMAPEG_NATIVE_PATH: mixed }, modelPath);
    expect(chosen.ok, chosen.message).toBe(true);
    expect(chosen.info!.cpuVariant).toBe("real");
    expect(chosen.info!.tried.find((t) => t.startsWith(backendFileName("cpu-broken")))).toMatch(/cannot load/);
    expect(chosen.tokens).toHaveLength(8);

    // a GPU module that does not load (as when its driver library is missing) is skipped with its
    // reason; forcing it fails with that reason and what to install
    const gpu = copyBuild("bad-gpu", (f) => isCore(f) || isCpu(f));
    writeFileSync(join(gpu, backendFileName("vulkan")), "not a shared library");
    const skipped = run({ LLAMAPEG_NATIVE_PATH: gpu });
    expect(skipped.ok, skipped.message).toBe(true);
    expect(skipped.info!.backend).toBe("cpu");
    expect(skipped.info!.tried.find((t) => t.includes(backendFileName("vulkan")))).toMatch(/cannot load backend/);
    const forcedGpu = run({ LLAMAPEG_NATIVE_PATH: gpu, LLAMAPEG_BACKEND: "vulkan" });
    expect(forcedGpu.code).toBe("ERR_NATIVE_LOAD");
    expect(forcedGpu.message).toMatch(/vulkan backend, which is not available: .*cannot load backend/);
    expect(forcedGpu.message).toMatch(/Vulkan driver/);

    const broken = copyBuild("broken", isCore);
    writeFileSync(join(broken, backendFileName("cpu-broken")), "not a shared library");
    const fails = run({ LLAMAPEG_NATIVE_PATH: broken });
    expect(fails.code).toBe("ERR_NATIVE_LOAD");
    expect(fails.message).toMatch(/none of the CPU backends .* runs on this CPU/);
  });
});
