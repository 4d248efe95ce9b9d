#!/usr/bin/env node
// Builds llama.cpp's own `llama-embedding` example (examples/embedding) from the vendored tree and
// caches the binary, for the embedding equivalence test and `npm run bench:embeddings` (never run
// by `npm install`). The same configure flags as scripts/llama-tools.mjs (so ccache shares
// llama.cpp's objects with it and with the addon) plus the examples, and only that one target.
//
//   node scripts/llama-embedding.mjs      build if needed; print {"llamaEmbedding", "built", ...}
//   LLAMAPEG_LLAMA_EMBEDDING=/path        use an existing binary, build nothing
//
// Cache: <cache>/llama-embedding/<key>/bin/llama-embedding, <key> as llama-tools.mjs computes it
// (tree, flags, platform, compiler). Concurrent callers: one builds under a lock, the others wait.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { buildFlags, cacheRoot, toolsLocation } from "./llama-tools.mjs";

const exe = process.platform === "win32" ? ".exe" : "";

function hasCommand(name) {
  try {
    execFileSync(process.platform === "win32" ? "where" : "which", [name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function run(command, args) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const collect = (chunk) => (tail = (tail + chunk.toString("utf8")).slice(-8000));
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolvePromise() : reject(new Error(`${command} ${args.join(" ")} failed (exit ${code}):\n${tail}`))));
  });
}

// cmake under the team-wide native build lock, as llama-tools.mjs does.
function cmake(args) {
  if (!hasCommand("flock")) return run("cmake", args);
  return run("flock", [process.env.LLAMAPEG_BUILD_LOCK ?? join(tmpdir(), "llamapeg-build.lock"), "cmake", ...args]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the path of `llama-embedding`, building it first when it is not cached. */
export async function ensureLlamaEmbedding({ log = (m) => process.stderr.write(`[llama-embedding] ${m}\n`) } = {}) {
  if (process.env.LLAMAPEG_LLAMA_EMBEDDING) {
    const p = resolve(process.env.LLAMAPEG_LLAMA_EMBEDDING);
    if (!existsSync(p)) throw new Error(`${p} does not exist`);
    return { llamaEmbedding: p, built: false, seconds: 0 };
  }
  const { key, source } = toolsLocation();
  const dir = join(cacheRoot(), "llama-embedding", key);
  const binary = join(dir, "bin", `llama-embedding${exe}`);
  if (existsSync(binary)) return { llamaEmbedding: binary, built: false, seconds: 0 };
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, "lock");
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      if (existsSync(binary)) return { llamaEmbedding: binary, built: false, seconds: 0 };
      await sleep(500);
    }
  }
  try {
    if (existsSync(binary)) return { llamaEmbedding: binary, built: false, seconds: 0 };
    const started = Date.now();
    const buildDir = join(dir, "build");
    const generator = hasCommand("ninja") ? ["-G", "Ninja"] : [];
    const flags = buildFlags().map((f) => (f === "-DLLAMA_BUILD_EXAMPLES=OFF" ? "-DLLAMA_BUILD_EXAMPLES=ON" : f));
    log(`building llama-embedding from ${source} in ${buildDir}`);
    if (!existsSync(join(buildDir, "CMakeCache.txt"))) await cmake(["-S", source, "-B", buildDir, ...generator, ...flags]);
    const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
    await cmake(["--build", buildDir, "--config", "Release", "--target", "llama-embedding", "--parallel", jobs]);
    const built = [join(buildDir, "bin", `llama-embedding${exe}`), join(buildDir, "bin", "Release", `llama-embedding${exe}`)].find((p) => existsSync(p));
    if (built === undefined) throw new Error(`the build finished but llama-embedding is not in ${join(buildDir, "bin")}`);
    mkdirSync(join(dir, "bin"), { recursive: true });
    const tmp = `${binary}.tmp-${process.pid}`;
    copyFileSync(built, tmp);
    chmodSync(tmp, 0o755);
    renameSync(tmp, binary);
    const seconds = (Date.now() - started) / 1000;
    writeFileSync(join(dir, "manifest.json"), JSON.stringify({ flags, builtAt: new Date().toISOString(), seconds }, null, 2));
    if (!process.env.LLAMAPEG_TOOLS_KEEP_BUILD) rmSync(buildDir, { recursive: true, force: true });
    log(`built in ${seconds.toFixed(0)} s -> ${binary}`);
    return { llamaEmbedding: binary, built: true, seconds };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureLlamaEmbedding()
    .then((r) => process.stdout.write(`${JSON.stringify(r)}\n`))
    .catch((error) => {
      console.error(`[llama-embedding] ${error.message}`);
      process.exit(1);
    });
}
