#!/usr/bin/env node
// Builds the addon from source with cmake-js: vendors llama.cpp first (pinned, verified), then
// configures once and builds incrementally (a second run after editing native/ only recompiles
// what changed). Output: <out>/Release/llamapeg.node with ggml's libraries and backend modules.
//   LLAMAPEG_BUILD_BACKENDS=cuda,vulkan,metal  GPU backends to build besides the CPU one
//                                              (default: none; metal on macOS)
//   LLAMAPEG_CPU_VARIANTS=1                    every CPU variant, chosen at run time (portable;
//                                              default: one CPU module for this machine)
//   LLAMAPEG_JOBS=N                            parallel compile jobs (default: CPU count)
//   --target NAME                              another CMake target (test/bench programs)
//   --out DIR                                  build folder (default: build)
//   --unless-prebuilt                          do nothing when a prebuilt binary for this platform is
//                                              installed (npm install runs this; a git checkout builds)
//   --gyp                                      what binding.gyp's action runs (`node-gyp rebuild`,
//                                              @electron/rebuild, IDEs): nothing when a prebuilt or an
//                                              up-to-date build is present, else a build from source
//                                              in build-gyp/ (see "node-gyp" below)
//
// A build from source in an installed package (not a git checkout) also copies its outputs to
// prebuilds/<platform>-<arch>/ (node-gyp-build looks there too; about 7 MB): `node-gyp rebuild`
// starts by deleting build/, and the copy keeps that from costing a second compile.
import { execFileSync, spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const target = option("--target", "llamapeg");
const out = resolve(root, option("--out", args.includes("--gyp") ? "build-gyp" : "build"));
const log = (message) => console.error(`[llamapeg build] ${message}`);
const gyp = args.includes("--gyp");
const checkout = existsSync(join(root, ".git"));
const backendsWanted = () => (process.env.LLAMAPEG_BUILD_BACKENDS || (process.platform === "darwin" ? "metal" : "cpu")).replace(/,/g, ";");
const variantsWanted = () => (/^(1|on|true|yes)$/i.test(process.env.LLAMAPEG_CPU_VARIANTS ?? "") ? "ON" : "OFF");

// A git checkout is where llamapeg itself is developed: always build there (incrementally).
if (args.includes("--unless-prebuilt") && !checkout) {
  const found = prebuilt();
  if (found) {
    log(`using ${found}; nothing to build`);
    process.exit(0);
  }
  log(`no prebuilt binary for ${platformKey()} is installed: building from source`);
}

// node-gyp: binding.gyp's one target runs this, so every tool that drives node-gyp (npm's gyp
// path, @electron/rebuild, IDEs) takes the same rule as the install script and never compiles
// llama.cpp a second way. node-gyp owns build/ meanwhile (its Makefile and config.gypi; `rebuild`
// deletes the folder first), so a build from source happens in build-gyp/ (kept, so the next one is
// incremental) and its outputs are copied to prebuilds/<platform>-<arch>/, where the loader and the
// next `node-gyp rebuild` find them.
if (gyp) {
  const found = prebuilt() ?? upToDate(join(root, "build", "Release"));
  if (found) {
    log(`using ${found}; nothing to build`);
    process.exit(0);
  }
  log(`node-gyp: no prebuilt or up-to-date build for ${platformKey()}: building from source`);
}

const missing = missingTools();
if (missing.length > 0) {
  for (const m of missing) log(m);
  log("or install on a platform with prebuilt binaries (docs/install.md), with optional dependencies enabled.");
  process.exit(1);
}

execFileSync(process.execPath, [join(root, "scripts", "vendor-llama.mjs")], { stdio: "inherit", cwd: root });

// cmake-js downloads Node's headers unless told where they are. Node installs ship them next to
// the binary (<prefix>/include/node), so point it there and build offline.
const env = { ...process.env };
// Node-API: one binary serves Node and Electron, so Node's own headers are the right ones even when
// @electron/rebuild drives the build (its runtime/target settings would make cmake-js download
// Electron's headers).
if (gyp) for (const k of ["npm_config_runtime", "npm_config_target", "npm_config_disturl", "npm_config_dist_url"]) delete env[k];
if (!env.npm_config_nodedir) {
  const prefix = resolve(dirname(process.execPath), "..");
  if (existsSync(join(prefix, "include", "node", "node_api.h"))) env.npm_config_nodedir = prefix;
}

const cmakeJs = join(dirname(require.resolve("cmake-js/package.json")), "bin", "cmake-js");
const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
// never empty: cmake-js drops an empty -D, and the cached list of an earlier build would stay
const backends = backendsWanted();
const variants = variantsWanted();
// A checkout (where the tests run) also defines llama.cpp's programs, built only when a test asks
// (CMakeLists.txt, LLAMAPEG_LLAMA_PROGRAMS); an installed package's build configures the addon alone.
const programs = checkout && !gyp ? "ON" : "OFF";
const cmdArgs = ["build", "--directory", root, "--out", out, "--target", target, "--parallel", jobs,
  `--CDLLAMAPEG_BACKENDS=${backends}`, `--CDLLAMAPEG_CPU_VARIANTS=${variants}`, `--CDLLAMAPEG_LLAMA_PROGRAMS=${programs}`];
if (process.env.LLAMAPEG_DEBUG) cmdArgs.push("--debug");
// `cmake-js build` configures only a new folder; a changed backend list needs a configure run
const cached = cacheValues(join(out, "CMakeCache.txt"));
const norm = (v) => (v ?? "").toLowerCase().split(";").filter((x) => x && x !== "cpu").sort().join(";");
const onOff = (v) => (/^(1|on|true|yes)$/i.test(v ?? "") ? "ON" : "OFF");
if (cached && (norm(cached.LLAMAPEG_BACKENDS) !== norm(backends) || onOff(cached.LLAMAPEG_CPU_VARIANTS) !== variants || onOff(cached.LLAMAPEG_LLAMA_PROGRAMS) !== programs)) {
  log(`reconfiguring ${out}: backends ${cached.LLAMAPEG_BACKENDS || "cpu"} -> ${backends}, CPU variants ${cached.LLAMAPEG_CPU_VARIANTS} -> ${variants}, llama.cpp programs ${onOff(cached.LLAMAPEG_LLAMA_PROGRAMS)} -> ${programs}`);
  try {
    execFileSync(process.execPath, [cmakeJs, "configure", ...cmdArgs.slice(1)], { stdio: "inherit", cwd: root, env });
  } catch (error) {
    log(`configuring failed (${error.status ?? error.message}); the message is above.`);
    process.exit(1);
  }
}
log(`cmake-js ${cmdArgs.join(" ")}`);
try {
  execFileSync(process.execPath, [cmakeJs, ...cmdArgs], { stdio: "inherit", cwd: root, env });
} catch (error) {
  log(`the native build failed (${error.status ?? error.message}); the compiler's message is above.`);
  log("needs: cmake >= 3.19, a C++17 compiler, git; retry with `npm run build:native` (in the package folder)");
  process.exit(1);
}
if (target === "llamapeg" && (gyp || (args.includes("--unless-prebuilt") && !checkout))) stage(join(out, "Release"));

// ---------------------------------------------------------------------------------------------

/** The LLAMAPEG_* entries of a CMake cache, or undefined when the folder is not configured. */
function cacheValues(file) {
  if (!existsSync(file)) return undefined;
  const values = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^(LLAMAPEG_[A-Z_]+):[A-Z]+=(.*)$/.exec(line);
    if (m) values[m[1]] = m[2];
  }
  return values;
}

/** The platform packages' name stem, as lib/native/load.ts computes it. */
function platformKey() {
  let libc = "";
  if (process.platform === "linux") {
    const report = process.report?.getReport();
    if (!report?.header?.glibcVersionRuntime) libc = "musl";
  }
  return `${process.platform === "linux" && libc ? "linuxmusl" : process.platform}-${process.arch}`;
}

/** Where a loadable binary already is: the platform package, or a build in this package. */
function prebuilt() {
  try {
    const dir = dirname(require.resolve(`@llamapeg/${platformKey()}/package.json`));
    if (existsSync(join(dir, "llamapeg.node"))) return `@llamapeg/${platformKey()}`;
  } catch {
    // not installed
  }
  return upToDate(join(root, "prebuilds", `${process.platform}-${process.arch}`));
}

/** The inputs of a build from source; a binary older than one of them is out of date. */
function newestSource() {
  let newest = 0;
  const visit = (path) => {
    let st;
    try {
      st = statSync(path);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of ["native", "cmake", "CMakeLists.txt", join("vendor", "llama.cpp.json")]) visit(join(root, p));
  return newest;
}

/**
 * `dir` when it holds a llamapeg.node newer than the sources, built with the backends and CPU
 * variants asked for now (a staged copy records them in llamapeg-build.json; a build folder's
 * CMake cache says them); else undefined.
 */
function upToDate(dir) {
  const node = join(dir, "llamapeg.node");
  if (!existsSync(node) || statSync(node).mtimeMs < newestSource()) return undefined;
  let built;
  try {
    built = JSON.parse(readFileSync(join(dir, "llamapeg-build.json"), "utf8"));
  } catch {
    const cache = cacheValues(join(dir, "..", "CMakeCache.txt"));
    if (cache) built = { backends: cache.LLAMAPEG_BACKENDS, variants: cache.LLAMAPEG_CPU_VARIANTS };
  }
  if (!built) return undefined;
  const norm = (v) => (v ?? "").toLowerCase().split(";").filter((x) => x && x !== "cpu").sort().join(";");
  const same = norm(built.backends) === norm(backendsWanted()) && (built.variants ?? "OFF").toUpperCase() === variantsWanted();
  return same ? dir : undefined;
}

/** Copies a build's loadable files (addon, ggml libraries, backend modules) to prebuilds/<platform>-<arch>/. */
function stage(release) {
  const dest = join(root, "prebuilds", `${process.platform}-${process.arch}`);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const name of readdirSync(release)) {
    if (/\.(node|so|dylib|dll)$|\.so\.\d/.test(name) && statSync(join(release, name)).isFile()) copyFileSync(join(release, name), join(dest, name));
  }
  writeFileSync(join(dest, "llamapeg-build.json"), `${JSON.stringify({ backends: backendsWanted(), variants: variantsWanted() })}\n`);
  log(`copied the build to ${dest}`);
}

function onPath(name) {
  const exts = process.platform === "win32" ? (process.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const file = join(dir, name + ext);
      try {
        if (statSync(file).isFile()) return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** What the build needs and cannot find: one message naming the tools and the fix (plus one per GPU backend). */
function missingTools() {
  const problems = [];
  const tools = [];
  const install = {
    linux: "sudo apt install cmake g++ make git (Debian/Ubuntu) or sudo dnf install cmake gcc-c++ make git (Fedora)",
    darwin: "xcode-select --install, then brew install cmake",
    win32: "Visual Studio 2022 with \"Desktop development with C++\" (it includes cmake), and Git for Windows",
  }[process.platform] ?? "your system's cmake, C++ compiler, make and git packages";
  const cmake = onPath("cmake");
  if (!cmake) {
    if (process.platform !== "win32") tools.push("cmake (>= 3.19)");
  } else {
    const r = spawnSync(cmake, ["--version"], { encoding: "utf8" });
    const m = /cmake version (\d+)\.(\d+)/.exec(r.stdout ?? "");
    if (m && (Number(m[1]) < 3 || (Number(m[1]) === 3 && Number(m[2]) < 19))) tools.push(`cmake >= 3.19 (found ${m[1]}.${m[2]})`);
  }
  if (process.platform !== "win32") {
    const cxx = process.env.CXX ? onPath(process.env.CXX) ?? (existsSync(process.env.CXX) ? process.env.CXX : undefined) : onPath("c++") ?? onPath("g++") ?? onPath("clang++");
    if (!cxx) tools.push(process.env.CXX ? `the C++ compiler CXX=${process.env.CXX}` : "a C++17 compiler (c++, g++ or clang++)");
    if (!onPath("ninja") && !onPath("make")) tools.push("make (or ninja)");
  }
  const pin = join(root, "vendor", "llama.cpp", "include", "llama.h");
  if (!process.env.LLAMA_CPP_DIR && !existsSync(pin) && !onPath("git")) tools.push("git (it unpacks the pinned llama.cpp sources)");
  if (tools.length > 0) {
    problems.push(`cannot build llamapeg from source for ${platformKey()}: ${tools.join(", ")} ${tools.length > 1 ? "are" : "is"} not on PATH. Install: ${install}`);
  }
  const wanted = (process.env.LLAMAPEG_BUILD_BACKENDS ?? "").toLowerCase().split(/[,;]/).map((b) => b.trim());
  if (wanted.includes("vulkan")) {
    if (!onPath("glslc")) problems.push("LLAMAPEG_BUILD_BACKENDS=vulkan needs glslc (the shader compiler) on PATH: apt install glslc libvulkan-dev spirv-headers, or the Vulkan SDK (VULKAN_SDK)");
  }
  if (wanted.includes("cuda")) {
    const cudaHome = process.env.CUDA_PATH ?? process.env.CUDA_HOME ?? (process.platform === "win32" ? undefined : "/usr/local/cuda");
    if (!onPath("nvcc") && !(cudaHome && existsSync(join(cudaHome, "bin", process.platform === "win32" ? "nvcc.exe" : "nvcc")))) {
      problems.push("LLAMAPEG_BUILD_BACKENDS=cuda needs the CUDA toolkit (nvcc, and cuBLAS): https://developer.nvidia.com/cuda-downloads, or your distribution's nvidia-cuda-toolkit");
    } else if (cudaHome && existsSync(join(cudaHome, "include")) && !existsSync(join(cudaHome, "include", "cublas_v2.h"))) {
      problems.push(`LLAMAPEG_BUILD_BACKENDS=cuda: ${cudaHome} has nvcc but no cuBLAS (include/cublas_v2.h), which ggml's CUDA backend links; install the toolkit's cuBLAS (libcublas-dev / cuda-libraries-dev)`);
    }
  }
  return problems;
}
