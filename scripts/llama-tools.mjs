#!/usr/bin/env node
// Builds llama.cpp's own `llama-server`, `rpc-server` (CMake target ggml-rpc-server) and
// `llama-embedding` (examples/embedding) from the vendored tree, for the tests that compare against
// llama.cpp's own programs and for the benchmarks (never run by `npm install`). Two ways:
//
// In the addon's build (a git checkout: build/ configured with LLAMAPEG_LLAMA_PROGRAMS, which
// scripts/build-native.mjs sets there): the three targets are built in build/ from the llama and
// ggml objects the addon already has and the `llama-common` the reference harness links (about
// half the compile of a separate build), into build/bin with the backend modules beside them. The
// tests take this way. Same llama.cpp code, same ggml build as the addon.
//
// Standalone (`{standalone: true}`, --standalone, LLAMAPEG_TOOLS_STANDALONE=1, or no such build/):
// llama.cpp's own CMake defaults in a build dir of their own, for the benchmarks that compare with
// llama-server as llama.cpp builds it, and for an installed package:
// - A separate CMake build dir, only those three targets, static (the binaries run from anywhere),
//   no OpenSSL, no curl, no web UI download: it builds offline. One build for all three: they
//   share llama.cpp's library and `common` (llama-embedding adds one source file; built on its own
//   it cost a second full compile, ~9 minutes on 2 cores).
// - Cache: <cache>/llama-tools/<key>/bin, where <cache> is LLAMAPEG_CACHE_DIR or the user's cache
//   folder (XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%) + /llamapeg, and <key>
//   hashes the vendored llama.cpp commit, this script's build flags, the platform and the compiler.
//   A cached build costs two stat calls.
// - Several processes may ask at once (vitest workers): one builds under a lock, the others wait
//   for it and then use its binaries. The cmake steps also take the team-wide native build lock
//   (flock LLAMAPEG_BUILD_LOCK, default /tmp/llamapeg-build.lock) so they never compete with
//   another native build for the cores.
//
//   node scripts/llama-tools.mjs            build if needed; print {"llamaServer", "rpcServer", "llamaEmbedding", ...}
//   node scripts/llama-tools.mjs --standalone   the standalone build (cached)
//   node scripts/llama-tools.mjs --rebuild  build the standalone one again even when cached
//   LLAMAPEG_LLAMA_SERVER=/path, LLAMAPEG_RPC_SERVER=/path, LLAMAPEG_LLAMA_EMBEDDING=/path
//                                                           use existing binaries, build nothing
//   LLAMAPEG_TOOLS_CMAKE_ARGS="-DGGML_CUDA=ON ..."           extra configure flags (part of the key)
//   LLAMAPEG_JOBS=N                                         parallel compile jobs (default: CPU count)
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, homedir, hostname, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const exe = process.platform === "win32" ? ".exe" : "";
// Bump when the way the tools are built changes in a way the flags do not show.
const RECIPE = 2; // 2: llama-embedding joined the build

/** The user's cache folder for llamapeg (LLAMAPEG_CACHE_DIR wins). */
export function cacheRoot() {
  if (process.env.LLAMAPEG_CACHE_DIR) return resolve(process.env.LLAMAPEG_CACHE_DIR);
  if (process.platform === "win32") return join(process.env.LOCALAPPDATA ?? join(homedir(), "AppData", "Local"), "llamapeg", "Cache");
  if (process.platform === "darwin") return join(homedir(), "Library", "Caches", "llamapeg");
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "llamapeg");
}

function llamaDir() {
  return process.env.LLAMA_CPP_DIR ? resolve(process.env.LLAMA_CPP_DIR) : join(root, "vendor", "llama.cpp");
}

function hasCommand(name) {
  try {
    execFileSync(process.platform === "win32" ? "where" : "which", [name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The configure flags. The only inputs besides the source tree; they go into the cache key. */
export function buildFlags() {
  const flags = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    // as in the addon's build, so ccache can share llama.cpp's objects between the two
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
    "-DLLAMA_ALL_WARNINGS=OFF",
    "-DLLAMA_BUILD_COMMON=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    // examples/ for llama-embedding only: the build names its targets, nothing else compiles
    "-DLLAMA_BUILD_EXAMPLES=ON",
    "-DLLAMA_BUILD_APP=OFF",
    // no web UI: neither an npm build nor a download from Hugging Face (the server runs without it)
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DGGML_RPC=ON",
    "-DGGML_RPC_RDMA=OFF",
    "-DGGML_BUILD_TESTS=OFF",
    "-DGGML_BUILD_EXAMPLES=OFF",
  ];
  const extra = (process.env.LLAMAPEG_TOOLS_CMAKE_ARGS ?? "").split(/\s+/).filter(Boolean);
  return [...flags, ...extra];
}

function sourceCommit(dir) {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    const pin = JSON.parse(readFileSync(join(root, "vendor", "llama.cpp.json"), "utf8"));
    return `${pin.commit}@${dir}`;
  }
}

function compilerId() {
  const cxx = process.env.CXX || (process.platform === "win32" ? "cl" : "c++");
  try {
    return execFileSync(cxx, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\n")[0];
  } catch {
    return cxx;
  }
}

/** Where the binaries of this tree + flags live, built or not. */
export function toolsLocation() {
  const src = llamaDir();
  const commit = sourceCommit(src);
  const flags = buildFlags();
  const key = createHash("sha256")
    .update(JSON.stringify({ RECIPE, commit, flags, platform: process.platform, arch: process.arch, cxx: compilerId() }))
    .digest("hex")
    .slice(0, 16);
  const dir = join(cacheRoot(), "llama-tools", key);
  return {
    key,
    commit,
    flags,
    source: src,
    dir,
    llamaServer: join(dir, "bin", `llama-server${exe}`),
    rpcServer: join(dir, "bin", `rpc-server${exe}`),
    llamaEmbedding: join(dir, "bin", `llama-embedding${exe}`),
    manifest: join(dir, "manifest.json"),
  };
}

function cached(loc) {
  return existsSync(loc.manifest) && existsSync(loc.llamaServer) && existsSync(loc.rpcServer) && existsSync(loc.llamaEmbedding);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/**
 * A directory lock (portable, no flock needed). A lock whose owner process is gone (same host) or
 * that is older than 3 hours is stale and taken over.
 */
async function withLock(lockDir, onWait, fn) {
  let told = false;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, "owner.json"), JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }));
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      let stale = false;
      try {
        const owner = JSON.parse(readFileSync(join(lockDir, "owner.json"), "utf8"));
        stale = (owner.host === hostname() && !alive(owner.pid)) || Date.now() - owner.since > 3 * 3600_000;
      } catch {
        // owner.json not written yet (the owner is between mkdir and write) or unreadable
        try {
          stale = Date.now() - statSync(lockDir).mtimeMs > 60_000;
        } catch {
          stale = false;
        }
      }
      if (stale) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (!told) {
        told = true;
        onWait();
      }
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

function run(command, args, { log, cwd }) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const collect = (chunk) => {
      tail = (tail + chunk.toString("utf8")).slice(-20_000);
      if (process.env.LLAMAPEG_TOOLS_VERBOSE) process.stderr.write(chunk);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolvePromise();
      else {
        log(tail.split("\n").slice(-60).join("\n"));
        reject(new Error(`${command} ${args.join(" ")} failed (exit ${code}); set LLAMAPEG_TOOLS_VERBOSE=1 to see the whole output`));
      }
    });
  });
}

/** cmake under the team-wide build lock where flock exists. */
function cmake(args, options) {
  if (hasCommand("flock")) {
    const lock = process.env.LLAMAPEG_BUILD_LOCK ?? join(tmpdir(), "llamapeg-build.lock");
    return run("flock", [lock, "cmake", ...args], options);
  }
  return run("cmake", args, options);
}

function findBinary(buildDir, name) {
  for (const sub of ["bin", join("bin", "Release")]) {
    const p = join(buildDir, sub, `${name}${exe}`);
    if (existsSync(p)) return p;
  }
  throw new Error(`the build finished but ${name}${exe} is not in ${join(buildDir, "bin")}`);
}

function install(from, to) {
  const tmp = `${to}.tmp-${process.pid}`;
  copyFileSync(from, tmp);
  chmodSync(tmp, 0o755);
  renameSync(tmp, to);
}

/** The addon's build folder when it defines llama.cpp's programs (CMakeLists.txt, LLAMAPEG_LLAMA_PROGRAMS). */
function addonBuildWithPrograms() {
  const dir = join(root, "build");
  const cache = join(dir, "CMakeCache.txt");
  if (!existsSync(cache)) return null;
  return /^LLAMAPEG_LLAMA_PROGRAMS:BOOL=(ON|TRUE|1)$/im.test(readFileSync(cache, "utf8")) ? dir : null;
}

/** The three targets in the addon's build (ninja's no-op when they are up to date). */
async function inAddonBuild(dir, log) {
  const bin = (name) => join(dir, "bin", `${name}${exe}`);
  const paths = { llamaServer: bin("llama-server"), rpcServer: bin("ggml-rpc-server"), llamaEmbedding: bin("llama-embedding") };
  const before = Object.values(paths).map((p) => (existsSync(p) ? statSync(p).mtimeMs : 0));
  const started = Date.now();
  const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
  await cmake(["--build", dir, "--config", "Release", "--target", "llama-server", "ggml-rpc-server", "llama-embedding", "--parallel", jobs], { log, cwd: root });
  for (const p of Object.values(paths)) if (!existsSync(p)) throw new Error(`the build finished but ${p} is not there`);
  const built = Object.values(paths).some((p, i) => statSync(p).mtimeMs !== before[i]);
  const seconds = (Date.now() - started) / 1000;
  if (built) log(`built in the addon's build folder in ${seconds.toFixed(0)} s -> ${join(dir, "bin")}`);
  return { ...paths, built, seconds: built ? seconds : 0, key: "addon-build", dir };
}

/**
 * Resolves with the paths of `llama-server`, `rpc-server` and `llama-embedding`, building them
 * first when they are not built yet: in the addon's build folder when it defines them, else (or
 * with `standalone`) in a cached build of their own. `built` says whether this call built them,
 * `seconds` how long that took.
 */
export async function ensureLlamaTools({ rebuild = false, standalone = false, log = (m) => process.stderr.write(`[llama-tools] ${m}\n`) } = {}) {
  const given = ["LLAMAPEG_LLAMA_SERVER", "LLAMAPEG_RPC_SERVER", "LLAMAPEG_LLAMA_EMBEDDING"];
  if (given.some((name) => process.env[name])) {
    const missing = given.filter((name) => !process.env[name]);
    if (missing.length > 0) throw new Error(`set all of ${given.join(", ")} (or none); missing: ${missing.join(", ")}`);
    const [llamaServer, rpcServer, llamaEmbedding] = given.map((name) => resolve(process.env[name]));
    for (const p of [llamaServer, rpcServer, llamaEmbedding]) if (!existsSync(p)) throw new Error(`${p} does not exist`);
    return { llamaServer, rpcServer, llamaEmbedding, built: false, seconds: 0, key: "env", dir: null };
  }
  const addonBuild = standalone || rebuild || /^(1|true|yes)$/i.test(process.env.LLAMAPEG_TOOLS_STANDALONE ?? "") || process.env.LLAMA_CPP_DIR ? null : addonBuildWithPrograms();
  if (addonBuild !== null) return inAddonBuild(addonBuild, log);
  if (!process.env.LLAMA_CPP_DIR && !existsSync(join(root, "vendor", "llama.cpp", "include", "llama.h"))) {
    execFileSync(process.execPath, [join(root, "scripts", "vendor-llama.mjs")], { stdio: "inherit", cwd: root });
  }
  const loc = toolsLocation();
  const result = (built, seconds) => ({ llamaServer: loc.llamaServer, rpcServer: loc.rpcServer, llamaEmbedding: loc.llamaEmbedding, built, seconds, key: loc.key, dir: loc.dir });
  if (!rebuild && cached(loc)) return result(false, 0);

  mkdirSync(loc.dir, { recursive: true });
  return withLock(
    join(loc.dir, "lock"),
    () => log(`waiting for another process building ${loc.dir}`),
    async () => {
      if (!rebuild && cached(loc)) return result(false, 0); // built by the process we waited for
      const started = Date.now();
      const buildDir = join(loc.dir, "build");
      const generator = hasCommand("ninja") ? ["-G", "Ninja"] : [];
      const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
      log(`building llama-server, rpc-server and llama-embedding from ${loc.source} (${loc.commit.slice(0, 12)}) in ${buildDir}`);
      const options = { log, cwd: root };
      if (!existsSync(join(buildDir, "CMakeCache.txt"))) {
        await cmake(["-S", loc.source, "-B", buildDir, ...generator, ...loc.flags], options);
      }
      await cmake(["--build", buildDir, "--config", "Release", "--target", "llama-server", "ggml-rpc-server", "llama-embedding", "--parallel", jobs], options);
      mkdirSync(join(loc.dir, "bin"), { recursive: true });
      install(findBinary(buildDir, "llama-server"), loc.llamaServer);
      install(findBinary(buildDir, "ggml-rpc-server"), loc.rpcServer);
      install(findBinary(buildDir, "llama-embedding"), loc.llamaEmbedding);
      const seconds = (Date.now() - started) / 1000;
      writeFileSync(loc.manifest, JSON.stringify({ commit: loc.commit, flags: loc.flags, builtAt: new Date().toISOString(), seconds }, null, 2));
      // The binaries are static; the objects (hundreds of MB) are not needed any more.
      if (!process.env.LLAMAPEG_TOOLS_KEEP_BUILD) rmSync(buildDir, { recursive: true, force: true });
      log(`built in ${seconds.toFixed(0)} s -> ${join(loc.dir, "bin")}`);
      return result(true, seconds);
    },
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureLlamaTools({ rebuild: process.argv.includes("--rebuild"), standalone: process.argv.includes("--standalone") })
    .then((r) => process.stdout.write(`${JSON.stringify(r)}\n`))
    .catch((error) => {
      console.error(`[llama-tools] ${error.message}`);
      process.exit(1);
    });
}
