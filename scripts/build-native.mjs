#!/usr/bin/env node
// Builds build/Release/llamapeg.node with cmake-js: vendors llama.cpp first (pinned, verified),
// then configures once and builds incrementally (a second run after editing native/ only
// recompiles what changed).
//   LLAMAPEG_BACKEND=cpu|cuda|metal|vulkan   GPU backend (default: cpu; metal on macOS)
//   LLAMAPEG_JOBS=N                          parallel compile jobs (default: CPU count)
//   --target NAME                            build another CMake target (test/bench programs)
//   --unless-prebuilt                        do nothing when prebuilds/<platform>-<arch>/ has a binary
//                                            (npm install runs this; an existing build/ is reused)
//                                            (binding.gyp's guard, for tools that call node-gyp)
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { existsSync, readdirSync } from "node:fs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

const args = process.argv.slice(2);
const targetIndex = args.indexOf("--target");
const target = targetIndex >= 0 ? args[targetIndex + 1] : "llamapeg";

if (args.includes("--unless-prebuilt")) {
  const dir = join(root, "prebuilds", `${process.platform}-${process.arch}`);
  if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".node"))) {
    console.error(`[llamapeg build] prebuilt binary found in ${dir}; nothing to build`);
    process.exit(0);
  }
}

execFileSync(process.execPath, [join(root, "scripts", "vendor-llama.mjs")], { stdio: "inherit", cwd: root });

// cmake-js downloads Node's headers unless told where they are. Node installs ship them next to
// the binary (<prefix>/include/node), so point it there and build offline.
const env = { ...process.env };
if (!env.npm_config_nodedir) {
  const prefix = resolve(dirname(process.execPath), "..");
  if (existsSync(join(prefix, "include", "node", "node_api.h"))) env.npm_config_nodedir = prefix;
}

const cmakeJs = join(dirname(require.resolve("cmake-js/package.json")), "bin", "cmake-js");
const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
const backend = process.env.LLAMAPEG_BACKEND;
const cmdArgs = ["build", "--directory", root, "--out", join(root, "build"), "--target", target, "--parallel", jobs];
if (backend) cmdArgs.push(`--CDLLAMAPEG_BACKEND=${backend}`);
if (process.env.LLAMAPEG_DEBUG) cmdArgs.push("--debug");
console.error(`[llamapeg build] cmake-js ${cmdArgs.join(" ")}`);
try {
  execFileSync(process.execPath, [cmakeJs, ...cmdArgs], { stdio: "inherit", cwd: root, env });
} catch (error) {
  console.error(`[llamapeg build] the native build failed (${error.status ?? error.message}).`);
  console.error("[llamapeg build] needs: cmake >= 3.19, a C++17 compiler, git; retry with `npm run build:native`.");
  process.exit(1);
}
