#!/usr/bin/env node
/**
 * PEG parse throughput: the TypeScript engine vs the C++ reference (llama.cpp common/peg-parser.cpp),
 * on the same arenas and inputs, one run. The C++ side is timed inside the harness process
 * (`peg.bench`: ns per parse over N iterations), so process and JSON overhead are not counted.
 *
 *   npm run build:ts && node scripts/bench-peg.mjs [--quick]
 *
 * Prints a table of MB/s per workload and the TS/C++ ratio. Needs dist/ (tsc) and the harness binary
 * (build/test-native/llamapeg-harness; vitest's conformance tests build it, or
 * `flock /tmp/llamapeg-build.lock node scripts/build-native.mjs --target llamapeg-harness`).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const distPeg = join(root, "dist", "peg", "index.js");
const harnessBin = process.env.LLAMAPEG_HARNESS_BIN ?? join(root, "build", "test-native", "llamapeg-harness");
if (!existsSync(distPeg)) {
  console.error(`missing ${distPeg}: run \`npm run build:ts\` first`);
  process.exit(1);
}
if (!existsSync(harnessBin)) {
  console.error(`missing ${harnessBin}: build it with \`flock /tmp/llamapeg-build.lock node scripts/build-native.mjs --target llamapeg-harness\``);
  process.exit(1);
}
const { PegArena } = await import(distPeg);

// ---------------------------------------------------------------- workloads
/** Deterministic pseudo-random JSON (no Math.random: runs must compare). */
function makeJson(seed, depth) {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const word = () => ["alpha", "beta", "gamma", "Paris", "東京", "naïve café", "quote \\\"x\\\"", "line\\nbreak", "tab\\tend"][Math.floor(rnd() * 9)];
  const value = (d) => {
    const r = rnd();
    if (d <= 0 || r < 0.35) {
      const k = Math.floor(rnd() * 5);
      if (k === 0) return String(Math.floor(rnd() * 100000) - 500);
      if (k === 1) return (rnd() * 1000).toFixed(3);
      if (k === 2) return rnd() < 0.5 ? "true" : "null";
      return `"${word()} ${word()}"`;
    }
    if (r < 0.65) {
      const n = 1 + Math.floor(rnd() * 5);
      return "[" + Array.from({ length: n }, () => value(d - 1)).join(", ") + "]";
    }
    const n = 1 + Math.floor(rnd() * 6);
    return "{" + Array.from({ length: n }, (_, i) => `"key_${i}_${word().replace(/[^a-z]/g, "")}": ${value(d - 1)}`).join(", ") + "}";
  };
  return value(depth);
}

function argsObject(seed, bytes) {
  const parts = [];
  let i = 0;
  let len = 2;
  while (len < bytes) {
    const v = makeJson(seed + i, 3);
    parts.push(`"field_${i}": ${v}`);
    len += v.length + 12;
    i++;
  }
  return "{" + parts.join(", ") + "}";
}

const hermesCalls = (n, size) =>
  "I'll call the tools now.\n" +
  Array.from({ length: n }, (_, i) => `<tool_call>\n{"name": "tool_${i}", "arguments": ${argsObject(i * 7 + 1, size)}}\n</tool_call>`).join("\n");

// Builder expressions, so the reference builds the very same arena (harness `peg.build`).
const hermesExpr = ["seq",
  ["tag", "content", ["until", "<tool_call>"]],
  ["star", ["seq", ["space"], ["tag", "tool", ["seq", "<tool_call>", ["space"], "{", ["space"], "\"name\"", ["space"], ":", ["space"], "\"", ["tag", "tool-name", ["chars", "[a-zA-Z0-9_]"]], "\"", ["space"], ",", ["space"], "\"arguments\"", ["space"], ":", ["space"], ["tag", "tool-args", ["json"]], ["space"], "}", ["space"], "</tool_call>"]]]],
  ["space"], ["end"]];
const jsonExpr = ["seq", ["json"], ["space"], ["end"]];
const xmlExpr = ["seq",
  ["tag", "content", ["until", "<tool_call>"]],
  ["star", ["seq", "<tool_call>\n<function=", ["tag", "tool-name", ["until", ">"]], ">\n",
    ["star", ["seq", "<parameter=", ["tag", "arg-name", ["until", ">"]], ">\n", ["tag", "arg-value", ["until", "\n</parameter>"]], "\n</parameter>\n"]],
    "</function>\n</tool_call>", ["space"]]],
  ["end"]];
const xmlCalls = (n, size) =>
  "Let me do that.\n" +
  Array.from({ length: n }, (_, i) => `<tool_call>\n<function=edit_file_${i}>\n<parameter=path>\nsrc/file_${i}.ts\n</parameter>\n<parameter=content>\n${argsObject(i * 3 + 5, size)}\n</parameter>\n</function>\n</tool_call>\n`).join("");

const workloads = [
  { name: "hermes tool calls, JSON args (3 x 4 KB)", expr: hermesExpr, input: hermesCalls(3, 4000), partial: false },
  { name: "hermes tool calls, streaming cut (partial)", expr: hermesExpr, input: hermesCalls(3, 4000).slice(0, -40), partial: true },
  { name: "one JSON value (~30 KB)", expr: jsonExpr, input: argsObject(42, 30000), partial: false },
  { name: "small tool call (~300 B)", expr: hermesExpr, input: hermesCalls(1, 200), partial: false },
  { name: "small tool call, streaming cut (partial)", expr: hermesExpr, input: hermesCalls(1, 200).slice(0, -30), partial: true },
  { name: "tool call (~2 KB)", expr: hermesExpr, input: hermesCalls(1, 2000), partial: false },
  { name: "XML tool calls, raw string args (2 x 8 KB)", expr: xmlExpr, input: xmlCalls(2, 8000), partial: false },
];

// ---------------------------------------------------------------- harness (one JSON line per request)
const child = spawn(harnessBin, [], { stdio: ["pipe", "pipe", "inherit"] });
const pending = new Map();
let nextId = 1;
createInterface({ input: child.stdout }).on("line", (line) => {
  const msg = JSON.parse(line);
  const p = pending.get(msg.id);
  pending.delete(msg.id);
  if (msg.ok) p.resolve(msg.result);
  else p.reject(new Error(`harness: ${msg.error}`));
});
function call(cmd, payload) {
  const id = nextId++;
  child.stdin.write(JSON.stringify({ id, cmd, ...payload }) + "\n");
  return new Promise((res, rej) => pending.set(id, { resolve: res, reject: rej }));
}

// ---------------------------------------------------------------- run
const minMs = quick ? 200 : 1000;
/**
 * CPU time per parse (process CPU, not wall: steadier on a shared machine; the C++ side does the
 * same), best of several batches for both engines, so a burst of load elsewhere does not decide.
 */
const BATCHES = quick ? 3 : 7;
function timeTs(arena, bytes, partial) {
  for (let i = 0; i < 20; i++) arena.parse(bytes, { partial });
  let best = Infinity;
  let r;
  for (let b = 0; b < BATCHES; b++) {
    let iters = 0;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    do {
      r = arena.parse(bytes, { partial });
      iters++;
    } while (performance.now() - t0 < minMs / BATCHES);
    const cpu = process.cpuUsage(c0);
    best = Math.min(best, ((cpu.user + cpu.system) * 1000) / iters);
  }
  return { nsPerParse: best, type: r.type, end: r.end };
}

async function timeCpp(arenaText, input, partial) {
  const probe = await call("peg.bench", { arena: arenaText, input, iterations: 3, partial });
  const iterations = Math.max(3, Math.round((minMs * 1e6) / BATCHES / Math.max(1, probe.cpu_ns_per_parse)));
  let best = Infinity;
  let last = probe;
  for (let b = 0; b < BATCHES; b++) {
    last = await call("peg.bench", { arena: arenaText, input, iterations, partial });
    best = Math.min(best, last.cpu_ns_per_parse);
  }
  return { nsPerParse: best, type: last.type, end: last.end };
}

const rows = [];
for (const w of workloads) {
  const built = await call("peg.build", { expr: w.expr });
  const arena = PegArena.fromJSON(built.arena_text);
  const bytes = new TextEncoder().encode(w.input);
  const ts = timeTs(arena, bytes, w.partial);
  const cpp = await timeCpp(built.arena_text, w.input, w.partial);
  if (cpp.type !== ts.type || cpp.end !== ts.end) {
    throw new Error(`${w.name}: results differ (C++ ${cpp.type}@${cpp.end}, TS ${ts.type}@${ts.end})`);
  }
  const mb = bytes.length / 1e6;
  const tsMBs = mb / (ts.nsPerParse / 1e9);
  const cppMBs = mb / (cpp.nsPerParse / 1e9);
  rows.push({ workload: w.name, bytes: bytes.length, result: ts.type, "TS MB/s": tsMBs.toFixed(1), "C++ MB/s": cppMBs.toFixed(1), "TS/C++": (tsMBs / cppMBs).toFixed(2) });
}

// ---------------------------------------------------------------- streaming: re-parse after every token
// The chat layer parses the whole output so far after each token. Cost of the last 64 such parses
// (~4 bytes per token) of a long transcript: a fresh parse each time (TS and C++) vs one
// PegStreamParser fed the growing input.
const streamRows = [];
{
  const built = await call("peg.build", { expr: hermesExpr });
  const arena = PegArena.fromJSON(built.arena_text);
  const full = new TextEncoder().encode(hermesCalls(3, 4000));
  const cutsAt = Array.from({ length: 64 }, (_, i) => full.length - 256 + i * 4);
  const prefixes = cutsAt.map((n) => full.subarray(0, n));
  const stream = arena.streamParser();
  stream.parse(full.subarray(0, cutsAt[0] - 4), { partial: true });
  const time = (fn) => {
    const c0 = process.cpuUsage();
    fn();
    const cu = process.cpuUsage(c0);
    return (cu.user + cu.system) / prefixes.length; // us per parse
  };
  for (let i = 0; i < 3; i++) for (const p of prefixes) arena.parse(p, { partial: true }); // warm
  const fresh = time(() => { for (const p of prefixes) arena.parse(p, { partial: true }); });
  const streamed = time(() => { for (const p of prefixes) stream.parse(p, { partial: true }); });
  let cppUs = 0;
  for (const p of prefixes.slice(0, 16)) {
    const r = await call("peg.bench", { arena: built.arena_text, input_b64: Buffer.from(p).toString("base64"), iterations: 5, partial: true });
    cppUs += r.cpu_ns_per_parse / 1000 / 16;
  }
  streamRows.push({ output: `${full.length} bytes`, "TS fresh us/parse": fresh.toFixed(0), "TS stream us/parse": streamed.toFixed(0), "C++ fresh us/parse": cppUs.toFixed(0) });
}

// ---------------------------------------------------------------- adversarial: nested choices sharing a rule
// S_k -> S_{k-1} "a" | S_{k-1} "b" on "x" "b"^k: 2^k calls without memoization, linear with it.
const adversarial = [];
for (const depth of quick ? [12, 16] : [12, 16, 20]) {
  // build S_0..S_depth as a let chain so refs resolve
  let bindings = [["s0", ["rule", "s0", "x"]]];
  for (let k = 1; k <= depth; k++) bindings.push([`s${k}`, ["rule", `s${k}`, ["|", ["+", ["var", `s${k - 1}`], "a"], ["+", ["var", `s${k - 1}`], "b"]]]]);
  const expr = ["let", bindings, ["var", `s${depth}`]];
  const built = await call("peg.build", { expr });
  const arena = PegArena.fromJSON(built.arena_text);
  const input = "x" + "b".repeat(depth);
  const c0 = process.cpuUsage();
  const r = arena.parse(input);
  const cu = process.cpuUsage(c0);
  const cpp = await call("peg.bench", { arena: built.arena_text, input, iterations: 1 });
  adversarial.push({ depth, input: input.length, result: r.type, "TS ms": ((cu.user + cu.system) / 1000).toFixed(2), "C++ ms": (cpp.cpu_ns_per_parse / 1e6).toFixed(2) });
}
child.stdin.end();

console.table(rows);
const ratios = rows.map((r) => Number(r["TS/C++"]));
const geo = Math.exp(ratios.reduce((a, r) => a + Math.log(r), 0) / ratios.length);
console.log(`geometric mean TS/C++ throughput ratio: ${geo.toFixed(2)}x (goal >= 0.5x)`);
console.log("per-token re-parse at the end of a streamed tool-call transcript:");
console.table(streamRows);
console.log("adversarial grammar (nested choices sharing a rule), one parse:");
console.table(adversarial);
