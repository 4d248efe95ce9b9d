#!/usr/bin/env node
// Writes a random-weight qwen2 test model (see lib/test-model). Uses the compiled package (dist/).
//   node scripts/make-test-model.mjs [--size tiny|small] [--out file.gguf] [--seed N]
//     [--n-embd N] [--n-layer N] [--n-head N] [--n-head-kv N] [--n-ff N] [--context-length N]
//     [--rope-freq-base F] [--weight-type f16|f32] [--logit-scale F] [--tie-output]
// Without --out it fills the cache (<cache>/models: LLAMAPEG_CACHE_DIR or the user cache folder,
// lib/paths.ts) and prints the path. Works from an installed package (node_modules/llamapeg).
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const entry = join(root, "dist", "test-model", "index.js");
if (!existsSync(entry)) {
  console.error(`make-test-model: ${entry} is missing; run \`npm run build:ts\` first`);
  process.exit(1);
}
const { ensureTestModel, writeTestModel, TEST_MODEL_PRESETS, countParameters } = await import(pathToFileURL(entry).href);

const numeric = {
  "--seed": "seed",
  "--n-embd": "nEmbd",
  "--n-layer": "nLayer",
  "--n-head": "nHead",
  "--n-head-kv": "nHeadKv",
  "--n-ff": "nFf",
  "--context-length": "contextLength",
  "--rope-freq-base": "ropeFreqBase",
  "--logit-scale": "logitScale",
};
let size = "tiny";
let out;
const overrides = {};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    if (i + 1 >= args.length) fail(`${a} needs a value`);
    return args[++i];
  };
  if (a === "--size") size = value();
  else if (a === "--out") out = resolve(value());
  else if (a === "--weight-type") overrides.weightType = value();
  else if (a === "--tie-output") overrides.tieOutput = true;
  else if (a in numeric) {
    const v = Number(value());
    if (!Number.isFinite(v)) fail(`${a} needs a number`);
    overrides[numeric[a]] = v;
  } else if (a === "--help" || a === "-h") {
    console.log("usage: node scripts/make-test-model.mjs [--size tiny|small] [--out file.gguf] [--seed N] [--n-embd N] ...");
    process.exit(0);
  } else fail(`unknown argument ${a}`);
}
if (!(size in TEST_MODEL_PRESETS)) fail(`--size must be tiny or small, got ${size}`);
if (overrides.weightType !== undefined && !["f16", "f32"].includes(overrides.weightType)) fail("--weight-type must be f16 or f32");

const options = { ...TEST_MODEL_PRESETS[size], ...overrides };
const t0 = performance.now();
let path;
if (out) {
  writeTestModel(out, options);
  path = out;
} else {
  path = await ensureTestModel(size, { overrides });
}
console.error(`make-test-model: ${(countParameters(options, 151936) / 1e6).toFixed(1)}M parameters, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
console.log(path);

function fail(message) {
  console.error(`make-test-model: ${message}`);
  process.exit(2);
}
