#!/usr/bin/env node
/**
 * Every benchmark of issue 9 (and the grammar, fleet and packaging ones) in one run, one after
 * another, so the tables in docs/bench.md come from the same machine state. Each script's output
 * goes to <out>/<name>.txt with how busy the machine was just before it (CPU use of everything, sampled
 * over 2 s from /proc/stat; the load average lags a minute behind, so it would mostly show the
 * previous script) and the 1-minute load average.
 *
 *   npm run build:ts && node scripts/bench-all.mjs [--out bench-results] [--only a,b] [--skip a,b] [--quick]
 *
 * --quick: fewer runs/tokens per script (a sanity pass, not numbers to publish).
 * Not here: scripts/prebuild-bench.mjs (an A/B of two builds you name) and `npm run fuzz`.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const out = opt("--out", "bench-results");
const only = opt("--only", "").split(",").filter(Boolean);
const skip = opt("--skip", "").split(",").filter(Boolean);
const quick = argv.includes("--quick");

const runs = (n) => ["--runs", quick ? "1" : String(n)];
const steps = [
  // The bound table (issue 9.1): Node and the C++ loop only, so the two runs of a pair are next
  // to each other; many runs for the paired intervals (scripts/bench/stats.mjs).
  ["decode", "scripts/bench/run.mjs", [...runs(15), "--tokens-tiny", "768", "--tokens-small", "192"]],
  // Every side (node-llama-cpp, passive, ggml's pool, the consumer thread): the rest of 9.1.
  ["decode-sides", "scripts/bench/run.mjs", ["--peers", "--policies", "default,passive", "--cpp-threadpool", "--cpp-consumer", ...runs(5)]],
  ["triggers", "scripts/bench-triggers.mjs", quick ? ["--runs", "1", "--tokens", "2000"] : []],
  ["mask", "scripts/bench-mask.mjs", []],
  ["stream", "scripts/bench-stream.mjs", []],
  ["plan", "scripts/bench-plan.mjs", []],
  ["parallel-tiny", "scripts/bench-parallel.mjs", ["--kv", "both", ...runs(9)]],
  ["parallel-small", "scripts/bench-parallel.mjs", ["--model", "small", "--kv", "both", ...runs(9)]],
  ["remote", "scripts/bench-remote.mjs", []],
  ["peg", "scripts/bench-peg.mjs", []],
];

mkdirSync(out, { recursive: true });
const load = () => loadavg()[0].toFixed(2);
const ticks = () => {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
};
/** Busy CPUs (0..cpus) over the next 2 s, or NaN where /proc/stat is missing. */
const busy = () => {
  try {
    const a = ticks();
    spawnSync("sleep", ["2"]);
    const b = ticks();
    return ((1 - (b.idle - a.idle) / (b.total - a.total)) * cpus().length).toFixed(2);
  } catch {
    return "NaN";
  }
};
const summary = [`# bench-all ${new Date().toISOString()} on ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), node ${process.version}`, ""];
summary.push("| script | seconds | busy CPUs before | load 1 min before | load after | exit |", "|---|---:|---:|---:|---:|---:|");
let failed = 0;
const bounds = [];
for (const [name, script, args] of steps) {
  if (only.length > 0 && !only.includes(name)) continue;
  if (skip.includes(name)) continue;
  const idle = busy();
  const before = load();
  const t0 = Date.now();
  console.error(`[bench-all] ${name}: node ${script} ${args.join(" ")} (busy ${idle}, load ${before})`);
  const r = spawnSync(process.execPath, [script, ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  const after = load();
  const text = `$ node ${script} ${args.join(" ")}\n# busy CPUs before ${idle}, load before ${before}, after ${after}, ${seconds} s, exit ${r.status}\n\n${r.stdout}\n${r.stderr ? `--- stderr ---\n${r.stderr}` : ""}`;
  writeFileSync(join(out, `${name}.txt`), text);
  process.stdout.write(`\n## ${name}\n${r.stdout}`);
  if (r.status !== 0) {
    failed++;
    process.stdout.write(r.stderr.slice(-4000));
  }
  summary.push(`| ${name} | ${seconds} | ${idle} | ${before} | ${after} | ${r.status} |`);
  // Every script prints its bounds as lines starting PASS or FAIL: gathered for the summary.
  for (const l of r.stdout.split("\n")) if (/^(PASS|FAIL)\b/.test(l)) bounds.push(`- ${name}: ${l}`);
}
const quiet = summary.slice(4).every((row) => Number(row.split("|")[3]) <= 0.2);
summary.push("", quiet ? "Every script started on a quiet machine (< 0.2 CPUs busy)." : "Some scripts started with > 0.2 CPUs busy: not quiet figures.");
if (bounds.length > 0) summary.push("", "## Bounds", "", ...bounds);
writeFileSync(join(out, "summary.md"), `${summary.join("\n")}\n`);
console.log(`\n${summary.join("\n")}`);
process.exit(failed > 0 ? 1 : 0);
