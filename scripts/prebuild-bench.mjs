#!/usr/bin/env node
// A/B of two builds of the addon with `npm run bench` (scripts/bench/run.mjs): e.g. the portable
// prebuild (CPU variant chosen at run time) against a -march=native build. Runs alternate A, B,
// B, A, ... so drifting load hits both alike; each run is one `run.mjs --json --runs 1` with
// LLAMAPEG_NATIVE_PATH pointing at that side's folder. Reports, per cell, the median Node tok/s
// and CPU ms/token of each side, B/A, and the C++ loop's figures in the same runs (the same
// binary for both sides: how much the machine's load moved between them).
//   node scripts/prebuild-bench.mjs --a DIR --b DIR [--rounds 3] [--models tiny,small]
//        [--threads 1,2] [--json]
//   e.g. --a /tmp/native-static (a -march=native llamapeg.node) --b build-prebuild/Release
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const sides = { A: option("--a"), B: option("--b") };
if (!sides.A || !sides.B) {
  console.error("usage: node scripts/prebuild-bench.mjs --a DIR --b DIR [--rounds N] [--models tiny,small] [--threads 1,2] [--json]");
  process.exit(2);
}
for (const [k, v] of Object.entries(sides)) {
  const file = v.endsWith(".node") ? v : join(v, "llamapeg.node");
  if (!existsSync(file)) {
    console.error(`--${k.toLowerCase()}: ${file} does not exist`);
    process.exit(2);
  }
}
const rounds = Number(option("--rounds", "3"));
const benchArgs = ["--json", "--runs", "1", "--no-grammar", "--models", option("--models", "tiny,small"), "--threads", option("--threads", "1,2")];
const log = (m) => console.error(`[prebuild-bench] ${m}`);

const loadBefore = loadavg();
const started = Date.now();
const runs = { A: [], B: [] };
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? ["A", "B"] : ["B", "A"]) {
    const res = spawnSync(process.execPath, [join(root, "scripts", "bench", "run.mjs"), ...benchArgs], {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, LLAMAPEG_NATIVE_PATH: resolve(sides[side]) },
      maxBuffer: 64 << 20,
    });
    if (res.status !== 0) {
      console.error(res.stderr);
      process.exit(1);
    }
    const report = JSON.parse(res.stdout);
    runs[side].push(report);
    log(`round ${r + 1} ${side}: ${report.cells.map((c) => `${c.model} t=${c.threads} ${c.nodeTokensPerSecond}`).join(", ")} tok/s (load ${report.loadAverage.before} -> ${report.loadAverage.after})`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const r3 = (x) => Math.round(x * 1000) / 1000;
const cells = runs.A[0].cells.map((cell, i) => {
  const pick = (side, f) => r3(median(runs[side].map((rep) => f(rep.cells[i]))));
  const a = pick("A", (c) => c.nodeTokensPerSecond);
  const b = pick("B", (c) => c.nodeTokensPerSecond);
  const aCpu = pick("A", (c) => c.nodeCpuMsPerToken);
  const bCpu = pick("B", (c) => c.nodeCpuMsPerToken);
  const cppA = pick("A", (c) => c.cppTokensPerSecond);
  const cppB = pick("B", (c) => c.cppTokensPerSecond);
  const same = runs.A.every((rep, k) => rep.cells[i].sameTokens && runs.B[k].cells[i].sameTokens);
  return {
    model: cell.model, threads: cell.threads, variant: cell.variant,
    aTokensPerSecond: a, bTokensPerSecond: b, bOverA: r3(b / a),
    aCpuMsPerToken: aCpu, bCpuMsPerToken: bCpu, cpuAOverB: r3(aCpu / bCpu),
    cppDuringA: cppA, cppDuringB: cppB, cppDrift: r3(cppB / cppA),
    sameTokensAsCpp: same,
  };
});
const report = {
  date: new Date().toISOString(),
  a: resolve(sides.A), b: resolve(sides.B), rounds,
  loadAverage: { before: loadBefore.map((x) => r3(x)), after: loadavg().map((x) => r3(x)) },
  wallSeconds: Math.round((Date.now() - started) / 1000),
  cells,
};
if (args.includes("--json")) {
  console.log(JSON.stringify(report, null, 2));
} else {
  console.log(`A = ${report.a}\nB = ${report.b}\n${rounds} rounds alternating, load ${report.loadAverage.before.join(" ")} -> ${report.loadAverage.after.join(" ")}, ${report.wallSeconds} s`);
  console.log("| model | threads | A tok/s | B tok/s | B/A | A CPU ms/tok | B CPU ms/tok | A/B CPU | C++ during A | C++ during B | C++ drift |");
  console.log("| ----- | ------- | ------- | ------- | --- | ------------ | ------------ | ------- | ------------ | ------------ | --------- |");
  for (const c of cells) {
    console.log(`| ${c.model} | ${c.threads} | ${c.aTokensPerSecond} | ${c.bTokensPerSecond} | ${c.bOverA} | ${c.aCpuMsPerToken} | ${c.bCpuMsPerToken} | ${c.cpuAOverB} | ${c.cppDuringA} | ${c.cppDuringB} | ${c.cppDrift} |`);
  }
}
