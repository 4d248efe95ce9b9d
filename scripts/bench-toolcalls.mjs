#!/usr/bin/env node
// npm run bench:toolcalls — the tool-call round trip (issue 22) over every vendored template:
// a generated corpus of real-world-shaped tool sets (scripts/bench/tool-roundtrip.mjs), each
// ground-truth call rendered by the template, read back by the plan's parser, and matched whole by
// the plan's tree. Prints one row per template that takes tools (exact rate over the calls it can
// render, errors, silent losses, admitted) as a Markdown table (docs/apply.md), or JSON.
//
//   node scripts/bench-toolcalls.mjs [--sets N] [--calls N] [--seed N] [--reference] [--json] [--only SUBSTRING]
import { readFileSync, readdirSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { exactRate, makeToolCorpus, roundTripTemplate } from "./bench/tool-roundtrip.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const sets = Number(opt("sets", "40"));
const callsPerSet = Number(opt("calls", "3"));
const seed = Number(opt("seed", "22"));
const only = opt("only", "");
const reference = argv.includes("--reference");

const lib = await import(pathToFileURL(join(root, "dist", "index.js")).href);
const cases = makeToolCorpus({ seed, sets, callsPerSet });
const dir = join(root, "vendor", "llama.cpp", "models", "templates");
const rows = [];
const started = Date.now();
for (const file of readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort()) {
  if (only !== "" && !file.includes(only)) continue;
  const s = roundTripTemplate(lib, readFileSync(join(dir, file), "utf8"), cases, { extra: reference ? { reference_mode: true } : {}, keep: 3 });
  if (s === null) continue;
  rows.push({ template: file.replace(/\.jinja$/, ""), ...s, rate: exactRate(s) });
}
const seconds = (Date.now() - started) / 1000;

if (argv.includes("--json")) {
  console.log(JSON.stringify({ sets, callsPerSet, seed, reference, cases: cases.length, seconds, loadavg: loadavg(), rows }, null, 2));
} else {
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  console.log(`Round trip of ${cases.length} calls per template (seed ${seed}, ${sets} tool sets x ${callsPerSet} turns${reference ? ", reference_mode" : ""}); ${seconds.toFixed(0)} s, load ${loadavg().map((x) => x.toFixed(2)).join(" ")}\n`);
  console.log("| template | renderable | exact | exact rate | parse errors | lost silently | admitted |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    const n = r.cases - r.unrenderable;
    console.log(`| ${r.template} | ${n}/${r.cases} | ${r.exact} | ${pct(r.rate)} | ${r.error + r.mismatch} | ${r.lost} | ${r.admitted}/${n} |`);
  }
  const tot = rows.reduce((a, r) => ({ n: a.n + r.cases - r.unrenderable, exact: a.exact + r.exact, lost: a.lost + r.lost }), { n: 0, exact: 0, lost: 0 });
  console.log(`\nall templates: ${tot.exact}/${tot.n} exact (${pct(tot.exact / Math.max(1, tot.n))}), ${tot.lost} lost silently`);
  if (argv.includes("--failures")) for (const r of rows) for (const f of r.failures) console.log(`${r.template} ${JSON.stringify(f)}`);
}
