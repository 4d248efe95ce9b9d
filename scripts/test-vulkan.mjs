#!/usr/bin/env node
// npm run test:vulkan: builds the addon with the Vulkan backend into build-vulkan/ (incremental;
// the first build compiles ggml-vulkan and its shaders: ~25 minutes on 2 busy cores) and runs
// test/backends/vulkan.test.ts against it. Not part of `npm test`.
//   Needs: the Vulkan headers and loader, glslc, and a Vulkan driver. On Debian/Ubuntu without a GPU:
//     apt-get install libvulkan-dev glslc spirv-headers mesa-vulkan-drivers   (lavapipe)
//   --build-dir DIR   another build folder (default build-vulkan)
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const i = args.indexOf("--build-dir");
const buildDir = resolve(root, i >= 0 ? args[i + 1] : "build-vulkan");
const log = (m) => console.error(`[test:vulkan] ${m}`);

const missing = [];
if (!["/usr/include/vulkan/vulkan.h", "/usr/local/include/vulkan/vulkan.h"].some(existsSync) && !process.env.VULKAN_SDK) missing.push("Vulkan headers (libvulkan-dev)");
if (spawnSync("glslc", ["--version"]).status !== 0) missing.push("glslc");
if (missing.length) {
  log(`missing: ${missing.join(", ")}. On Debian/Ubuntu: apt-get install libvulkan-dev glslc spirv-headers mesa-vulkan-drivers`);
  process.exit(1);
}

log(`building the Vulkan backend in ${buildDir}`);
const b = spawnSync(process.execPath, [join(root, "scripts", "build-native.mjs"), "--out", buildDir], {
  stdio: "inherit",
  cwd: root,
  env: { ...process.env, LLAMAPEG_BUILD_BACKENDS: "vulkan" },
});
if (b.status !== 0) process.exit(b.status ?? 1);

const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
const t = spawnSync(process.execPath, [vitest, "run", "test/backends/vulkan.test.ts"], {
  stdio: "inherit",
  cwd: root,
  env: { ...process.env, LLAMAPEG_TEST_VULKAN_DIR: join(buildDir, "Release") },
});
process.exit(t.status ?? 1);
