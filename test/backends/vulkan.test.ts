// Opt-in: `npm run test:vulkan` (scripts/test-vulkan.mjs builds the Vulkan backend into
// build-vulkan/ and runs this file with LLAMAPEG_TEST_VULKAN_DIR set). Skipped by `npm test`: CI has
// no Vulkan build (it adds ~25 minutes of shader and backend compile on 2 cores).
//
// Every layer of the test models goes to the Vulkan device (on a machine without a GPU: Mesa's
// lavapipe, a software device, selected with GGML_VK_VISIBLE_DEVICES=0 because ggml skips
// CPU-type Vulkan devices by default) and the greedy tokens must be the CPU backend's.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

import { minimalPath, npm, writeProject } from "../install/project.js";

import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const dir = process.env.LLAMAPEG_TEST_VULKAN_DIR;
const script = join(import.meta.dirname, "fixtures", "offload.mjs");

interface Side {
  tokens: number[];
  ms: number;
  logs: string[];
}

function offload(modelPath: string, tokens: number): { cpu: Side; vulkan: Side } {
  const env = { ...process.env, LLAMAPEG_NATIVE_PATH: dir, GGML_VK_VISIBLE_DEVICES: process.env.GGML_VK_VISIBLE_DEVICES ?? "0", OMP_WAIT_POLICY: "passive" };
  const r = spawnSync(process.execPath, [script, packageRoot, modelPath, "vulkan", String(tokens)], { encoding: "utf8", env, timeout: 600_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as { cpu: Side; vulkan: Side };
}

const line = (logs: string[], re: RegExp) => logs.find((l) => re.test(l));

describe.skipIf(!dir)("Vulkan backend (opt-in)", () => {
  let tiny: string;
  let small: string;
  beforeAll(async () => {
    tiny = await ensureTestModel("tiny");
    small = await ensureTestModel("small");
  });

  it.each([
    ["tiny", 32, 3],
    ["small", 24, 13],
  ] as const)("%s: all layers on Vulkan0, %i greedy tokens equal to the CPU backend's", (size, count, layers) => {
    const r = offload(size === "tiny" ? tiny : small, count);
    const logs = r.vulkan.logs;
    expect(line(logs, /using device Vulkan0/), logs.join("\n")).toBeDefined();
    expect(line(logs, new RegExp(`offloaded ${layers}/${layers} layers to GPU`))).toBeDefined();
    expect(line(logs, /Vulkan0 model buffer size = +[0-9.]+ MiB/)).toBeDefined();
    expect(line(logs, /Vulkan0 KV buffer size/)).toBeDefined();
    // the CPU side ran on the CPU backend alone
    expect(line(r.cpu.logs, /Vulkan0/)).toBeUndefined();
    expect(r.cpu.tokens).toHaveLength(count);
    expect(r.vulkan.tokens).toEqual(r.cpu.tokens);
    console.log(`[vulkan] ${size}: ${count} tokens equal; CPU ${(r.cpu.ms / count).toFixed(1)} ms/token, Vulkan ${(r.vulkan.ms / count).toFixed(1)} ms/token`);
  }, 600_000);

  it("embeddings on Vulkan0: the short graph (stopped after the final norm) equals the whole graph and the CPU backend's", () => {
    const env = { ...process.env, LLAMAPEG_NATIVE_PATH: dir, GGML_VK_VISIBLE_DEVICES: process.env.GGML_VK_VISIBLE_DEVICES ?? "0", OMP_WAIT_POLICY: "passive" };
    const r = spawnSync(process.execPath, [join(import.meta.dirname, "fixtures", "embed.mjs"), packageRoot, tiny, "vulkan"], { encoding: "utf8", env, timeout: 600_000 });
    expect(r.status, r.stderr).toBe(0);
    type Graph = { first: number[][]; later: number[][]; shortDecodes: number[] };
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<"cpu" | "vulkan", Record<"short" | "reference", Graph>>;
    const maxDiff = (a: number[][], b: number[][]) => Math.max(...a.flatMap((v, i) => v.map((x, j) => Math.abs(x - b[i]![j]!))));
    for (const backend of ["cpu", "vulkan"] as const) {
      expect(out[backend].short.shortDecodes, backend).toEqual([0, 1]);
      expect(out[backend].reference.shortDecodes, backend).toEqual([0, 0]);
      // within a backend: the short graph's later (stopped) decode against llama.cpp's whole graph
      expect(maxDiff(out[backend].short.later, out[backend].reference.later), backend).toBeLessThan(1e-5);
    }
    // across backends: another device's rounding (lavapipe: 6.6e-4 on unit vectors; GPUs with
    // half-precision matmuls round more)
    expect(maxDiff(out.vulkan.short.later, out.cpu.short.later)).toBeLessThan(5e-3);
    console.log(`[vulkan] embeddings: short vs whole graph ${maxDiff(out.vulkan.short.later, out.vulkan.reference.later).toExponential(1)}, Vulkan vs CPU ${maxDiff(out.vulkan.short.later, out.cpu.short.later).toExponential(1)}`);
  }, 600_000);

  it("installed as packages: @llamapeg/<platform>-vulkan's module loads into @llamapeg/<platform>'s libraries", () => {
    const work = mkdtempSync(join(tmpdir(), "llamapeg-vk-install-"));
    try {
      const script = (args: string[]) => {
        const r = spawnSync(process.execPath, [join(packageRoot, "scripts", "prebuild.mjs"), ...args], { cwd: packageRoot, encoding: "utf8", timeout: 300_000 });
        expect(r.status, r.stderr).toBe(0);
        return r.stdout.trim();
      };
      const made = JSON.parse(script(["--from-build", dir!, "--backends", "vulkan", "--out", join(work, "pb"), "--pack"])) as { name: string; tarball: string }[];
      const key = made[0]!.name.replace("@llamapeg/", "");
      const main = script(["--main", "--out", work, "--platforms", `${key},${key}-vulkan`]).split("\n").pop()!;
      const project = join(work, "project");
      writeProject(project, packageRoot, { main, platform: made[0]!.tarball, more: [made[1]!.tarball] });
      const env = { HOME: process.env.HOME, PATH: minimalPath(join(work, "bin")), XDG_CACHE_HOME: join(work, "cache"), OMP_WAIT_POLICY: "passive",
        GGML_VK_VISIBLE_DEVICES: process.env.GGML_VK_VISIBLE_DEVICES ?? "0" };
      const ci = npm(["ci", "--offline", "--no-audit", "--no-fund"], project, env);
      expect(ci.status, ci.stderr).toBe(0);
      const probe = join(packageRoot, "test", "install", "fixtures", "probe.mjs");
      const r = spawnSync("node", [probe, join(project, "node_modules", "llamapeg"), tiny, "vulkan"], { cwd: project, env, encoding: "utf8", timeout: 300_000 });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { ok: boolean; message?: string; tokens: number[]; info: { backend: string; backends: { name: string; path: string }[] } };
      expect(out.ok, out.message).toBe(true);
      expect(out.info.backend).toBe("vulkan");
      expect(out.info.backends.find((b) => b.name === "vulkan")!.path).toContain(join("node_modules", "@llamapeg", `${key}-vulkan`));
      expect(out.info.backends.find((b) => b.name === "cpu")!.path).toContain(join("node_modules", "@llamapeg", key));
      const cpu = spawnSync("node", [probe, join(project, "node_modules", "llamapeg"), tiny, "cpu"], { cwd: project, env, encoding: "utf8", timeout: 300_000 });
      expect(JSON.parse(cpu.stdout.trim().split("\n").pop()!).tokens).toEqual(out.tokens);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 600_000);
});
