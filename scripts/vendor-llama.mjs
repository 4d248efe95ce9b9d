#!/usr/bin/env node
// Puts the pinned llama.cpp tree into vendor/llama.cpp.
// Source: the git bundle shipped inside the node-llama-cpp npm tarball (the only registry we can
// reach). Only the llama.cpp sources are used; nothing of node-llama-cpp's own code or binaries.
// Idempotent: a verified checkout at the pinned commit is left alone.
// LLAMA_CPP_DIR=/path uses an existing checkout instead (it is checked for the pinned commit only
// when it is a git tree; otherwise trusted as is).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir as userCacheDir } from "./paths.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pin = JSON.parse(readFileSync(join(root, "vendor", "llama.cpp.json"), "utf8"));
const target = join(root, "vendor", "llama.cpp");
// the npm tarball of the pinned release, kept in the user's cache (never the package folder)
const cacheDir = join(userCacheDir(), "vendor");

function fail(message) {
  console.error(`[llamapeg vendor] ${message}`);
  process.exit(1);
}
function log(message) {
  if (!process.env.LLAMAPEG_QUIET) console.error(`[llamapeg vendor] ${message}`);
}
function git(args, cwd) {
  return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}
function headOf(dir) {
  try {
    return git(["rev-parse", "HEAD"], dir);
  } catch {
    return null;
  }
}

export function llamaCppDir() {
  return process.env.LLAMA_CPP_DIR ? resolve(process.env.LLAMA_CPP_DIR) : target;
}

function main() {
  if (process.env.LLAMA_CPP_DIR) {
    const dir = resolve(process.env.LLAMA_CPP_DIR);
    if (!existsSync(join(dir, "include", "llama.h"))) fail(`LLAMA_CPP_DIR=${dir} has no include/llama.h`);
    log(`using LLAMA_CPP_DIR=${dir}`);
    return;
  }
  if (headOf(target) === pin.commit && existsSync(join(target, "include", "llama.h"))) {
    log(`vendor/llama.cpp is at the pinned commit ${pin.commit.slice(0, 12)}`);
    return;
  }

  mkdirSync(cacheDir, { recursive: true });
  const tarball = join(cacheDir, `${pin.package}-${pin.version}.tgz`);
  if (!existsSync(tarball)) {
    log(`npm pack ${pin.package}@${pin.version}`);
    execFileSync("npm", ["pack", `${pin.package}@${pin.version}`, "--silent", "--pack-destination", cacheDir], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (!existsSync(tarball)) fail(`npm pack did not produce ${tarball}`);
  }
  const [algo, expected] = pin.integrity.split(/-(.*)/s);
  const actual = createHash(algo).update(readFileSync(tarball)).digest("base64");
  if (actual !== expected) {
    rmSync(tarball, { force: true });
    fail(`integrity mismatch for ${tarball}: expected ${pin.integrity}, got ${algo}-${actual} (the cached tarball was removed)`);
  }

  const unpack = join(cacheDir, `${pin.package}-${pin.version}`);
  rmSync(unpack, { recursive: true, force: true });
  mkdirSync(unpack, { recursive: true });
  execFileSync("tar", ["xzf", tarball, "-C", unpack, `package/${pin.bundle}`], { stdio: "inherit" });
  const bundle = join(unpack, "package", pin.bundle);
  if (!existsSync(bundle)) fail(`the tarball has no ${pin.bundle}`);
  const bundleHash = createHash("sha256").update(readFileSync(bundle)).digest("hex");
  if (bundleHash !== pin.bundleSha256) fail(`sha256 mismatch for ${pin.bundle}: expected ${pin.bundleSha256}, got ${bundleHash}`);

  rmSync(target, { recursive: true, force: true });
  log(`git clone ${pin.bundle} -> vendor/llama.cpp`);
  execFileSync("git", ["clone", "--quiet", "--no-checkout", bundle, target], { stdio: "inherit" });
  execFileSync("git", ["-c", "advice.detachedHead=false", "checkout", "--quiet", pin.commit], { cwd: target, stdio: "inherit" });
  if (headOf(target) !== pin.commit) fail(`checkout of ${pin.commit} failed`);
  rmSync(unpack, { recursive: true, force: true });
  log(`vendor/llama.cpp at ${pin.commit.slice(0, 12)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
