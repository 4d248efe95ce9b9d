#!/usr/bin/env node
// npm test: the suite in two phases, so that the one slow build in it competes with no test.
//   1. everything but the tests that run llama.cpp's own programs (vitest, two files at a time);
//   2. those tests (test/remote/, test/llama-programs/): first llama.cpp's llama-server, rpc-server
//      and llama-embedding are built in one build (scripts/llama-tools.mjs, cached in the user's
//      cache folder: minutes the first time, a few stat calls after), alone on the machine, then
//      the tests run against them.
//   node scripts/test.mjs [--full] [vitest arguments...]
//     --full   the exhaustive variants too (LLAMAPEG_FULL=1: every vocabulary, every template x
//              every conversation, fuzz at full size, the node-gyp build from source); npm run test:full
//     any other arguments go to vitest in both phases (e.g. --reporter=verbose); with file or
//     folder filters (`npm test -- test/unit`) it is one plain `vitest run` of those
// LLAMAPEG_SKIP_REMOTE=1 leaves phase 2 out (no llama.cpp programs built).
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const env = { ...process.env };
if (args.includes("--full")) {
  env.LLAMAPEG_FULL = "1";
  env.LLAMAPEG_FUZZ ??= "long"; // test/fuzz's own switch for its full size
  env.LLAMAPEG_APPLY_FULL_SWEEP ??= "1"; // conformance/apply: every prefix, not 24
}
const rest = args.filter((a) => a !== "--full");
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
const log = (message) => console.error(`[llamapeg test] ${message}`);
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(0)} s`;

function step(name, command, commandArgs) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [command, ...commandArgs], { cwd: root, env, stdio: "inherit" });
  log(`${name}: ${r.status === 0 ? "passed" : `failed (${r.status ?? r.signal})`} in ${seconds(started)}`);
  return r.status === 0;
}

if (rest.some((a) => !a.startsWith("-"))) process.exit(step("vitest run " + rest.join(" "), vitest, ["run", ...rest]) ? 0 : 1);

// the folders of phase 2
const needTools = ["test/remote", "test/llama-programs"];
const started = Date.now();
let ok = step(`tests (all but ${needTools.join(", ")})`, vitest, ["run", ...needTools.flatMap((d) => ["--exclude", `${d}/**`]), ...rest]);
if (!/^(1|true|yes)$/i.test(env.LLAMAPEG_SKIP_REMOTE ?? "")) {
  // (stdout: the binaries' paths as JSON, not needed here)
  const tools = Date.now();
  const built = spawnSync(process.execPath, [join(root, "scripts", "llama-tools.mjs")], { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] });
  log(`llama-server + rpc-server + llama-embedding: ${built.status === 0 ? "ready" : "build failed"} in ${seconds(tools)}`);
  ok = built.status === 0 && step(needTools.join(" + "), vitest, ["run", ...needTools, ...rest]) && ok;
}
log(`total ${seconds(started)}`);
process.exit(ok ? 0 : 1);
