#!/usr/bin/env node
// The long fuzz run: every class of test/fuzz at its "long" size (thousands of random cases per
// class, each where a crash is possible in a child process), then the baseline (the GGUF and
// grammar corpora on the raw addon, without llamapeg's pre-checks), then one table of figures:
// cases, coded errors, crashes, hangs, max time per case, peak RSS per class.
// Usage: npm run fuzz [-- --ci]   (--ci: the sizes `npm test` runs, for a quick look)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const ci = process.argv.includes("--ci");
const report = mkdtempSync(join(tmpdir(), "llamapeg-fuzz-report-"));
const env = { ...process.env, LLAMAPEG_FUZZ: ci ? "ci" : "long", LLAMAPEG_FUZZ_REPORT: report };

console.log(`fuzz (${ci ? "ci" : "long"} size), load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
const tests = spawnSync(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", "test/fuzz", "test/native-grammar/sampler-diff.test.ts"], { cwd: root, env, stdio: "inherit" });
const baseline = spawnSync(process.execPath, ["--import", "./test/fuzz/ts-register.mjs", "test/fuzz/baseline.ts", ci ? "ci" : "long"], { cwd: root, env, stdio: "inherit" });

const rows = readdirSync(report)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(report, f), "utf8")));
console.log("\n| class | cases | ok | coded errors | argument errors | uncoded | crashes | hangs | max ms (wall) | max ms (CPU) | peak RSS MB |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const s of rows) {
  console.log(`| ${s.class}${s.raw ? " (raw addon, no pre-checks)" : ""} | ${s.cases} | ${s.ok} | ${s.coded} | ${s.argument} | ${s.uncoded} | ${s.crashes} | ${s.hangs} | ${Math.round(s.maxMs)} | ${Math.round(s.maxCpuMs ?? 0)} | ${s.peakRssMb} |`);
}
console.log(`\nload ${loadavg().map((l) => l.toFixed(1)).join(" ")}; reports in ${report}`);
process.exit(tests.status === 0 && baseline.status === 0 ? 0 : 1);
