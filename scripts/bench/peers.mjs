// Benchmark peers installed from the npm registry into a temporary folder (never a dependency of
// llamapeg): the newest node-llama-cpp, whose prebuilt llama.cpp binaries come inside its npm
// packages. The install is kept per version under the OS temp folder and reused by later runs.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Returns {version, dir} of the newest node-llama-cpp, installing it when this version is new. */
export function installNodeLlamaCpp(log) {
  const version = execFileSync(npm, ["view", "node-llama-cpp", "version"], { encoding: "utf8" }).trim();
  if (!/^\d+\.\d+\.\d+/.test(version)) throw new Error(`npm view node-llama-cpp version gave ${JSON.stringify(version)}`);
  const dir = join(tmpdir(), "llamapeg-bench-peers", `node-llama-cpp-${version}`);
  if (!existsSync(join(dir, "node_modules", "node-llama-cpp", "package.json"))) {
    log(`installing node-llama-cpp@${version} into ${dir} (a benchmark peer, not a dependency)...`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "llamapeg-bench-peer", private: true }) + "\n");
    // Its prebuilt binaries are optional dependencies of the package; nothing is built or
    // downloaded outside npm (NODE_LLAMA_CPP_SKIP_DOWNLOAD).
    execFileSync(npm, ["install", "--no-audit", "--no-fund", "--no-save", `node-llama-cpp@${version}`], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true" },
    });
  }
  return { version, dir };
}
