#!/usr/bin/env node
/**
 * Streaming cost: CPU time of parse + diff over a whole streamed model output, TS (`ChatSession`)
 * vs the C++ reference (the harness's `chat.stream`: llama.cpp server's loop, a partial re-parse of
 * the whole text after every chunk, tool-call ids, diff, header-first filter), same grammar on both
 * sides (our arena, serialized with `toJSON()`), same chunks.
 *
 *   npm run build:ts && node scripts/bench-stream.mjs [--json] [--quick] [--sizes 1000,4000,16000] [--seed N] [--reps N] [--no-array]
 *
 * Output: synthetic (reasoning block, content, two JSON-native tool calls with long string
 * arguments holding quotes, backslashes, newlines, CJK and emoji), split into "tokens" of 1-8 bytes
 * drawn from a seeded PRNG, cutting UTF-8 characters wherever they fall. A second workload (TS only,
 * skipped with --no-array) streams one call whose argument is a long JSON array of integers, the
 * shape where an open container collects thousands of finished children.
 *
 * The ratios printed at the end are the issue's goals: per-token cost at the tail of the longest
 * stream over that of the shortest (flat = 1), the longest stream's total, and the reference's total
 * over the session's.
 *
 * Timing: TS with process.cpuUsage() around the feeds (+ finish); C++ with the harness's per-step
 * process CPU time (`timing: true`, std::clock around parse + ids + diff, JSON not counted). Two TS
 * columns: the session as shipped (its arena's stream parser reuses the previous frame's memo) and
 * the session with a plain `parse()` (a fresh re-parse each token, what the reference does).
 *
 * The harness answers every step with the whole message so far, so a 16k-token stream in one
 * request would be ~0.5 GB of JSON. The reference keeps no parse state between steps (each step
 * re-parses text[0..k] and diffs against step k-1's message), so the script replays windows of
 * steps: chunk 0 of a request is everything before the window (one step, not counted), then the
 * window's chunks one by one, which costs exactly what those steps cost in the full stream. Up to
 * --full-max tokens every step is measured; above, the last 5% are measured in full and the rest
 * is sampled (a window of steps in the middle of every group, the group's total = window mean x
 * group size): marked "sampled" in the table.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const asJson = argv.includes("--json");
const withArray = !argv.includes("--no-array");
const quick = argv.includes("--quick");
const sizes = opt("--sizes", quick ? "1000,4000" : "1000,4000,16000").split(",").map((s) => Number(s.trim()));
const seed = Number(opt("--seed", "7"));
const fullMax = Number(opt("--full-max", "4096"));
const tsReps = Number(opt("--reps", quick ? "1" : "3"));
const refReps = Math.max(1, Math.min(tsReps, 2)); // the reference's variance is smaller, its runs cost more wall time
const log = (...a) => {
  if (!asJson) console.error(...a);
};

const dist = join(root, "dist", "chat");
const harnessBin = process.env.LLAMAPEG_HARNESS_BIN ?? join(root, "build", "test-native", "llamapeg-harness");
if (!existsSync(join(dist, "session.js"))) {
  console.error(`missing ${dist}/session.js: run \`npm run build:ts\` first`);
  process.exit(1);
}
if (!existsSync(harnessBin)) {
  console.error(`missing ${harnessBin}: build it with \`flock /tmp/llamapeg-build.lock node scripts/build-native.mjs --target llamapeg-harness\``);
  process.exit(1);
}
const { ChatSession } = await import(join(dist, "session.js"));
const { chatPlan } = await import(join(dist, "plan.js"));
const { buildChatOutputParser } = await import(join(dist, "grammar", "output-parser.js"));

// ---------------------------------------------------------------- grammar (Hermes / Qwen-like)
const TOOLS = [
  {
    type: "function",
    function: {
      name: "write_file",
      description: "Write a file",
      parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
    },
  },
  {
    type: "function",
    function: {
      name: "store_values",
      description: "Store measured values",
      parameters: { type: "object", properties: { series: { type: "string" }, values: { type: "array", items: { type: "integer" } } }, required: ["series", "values"] },
    },
  },
  {
    type: "function",
    function: {
      name: "search_code",
      description: "Search the code base",
      parameters: { type: "object", properties: { query: { type: "string" }, max_results: { type: "integer" } }, required: ["query"] },
    },
  },
];
const FORMAT = {
  reasoning: { mode: "tag_based", start: "<think>", end: "</think>" },
  content: { mode: "plain", start: "", end: "" },
  tools: {
    format: {
      mode: "json_native", sectionStart: "", sectionEnd: "", perCallStart: "<tool_call>\n", perCallEnd: "</tool_call>",
      functionField: "function", nameField: "name", argsField: "arguments", parameterOrder: ["name", "arguments"],
    },
    function: { namePrefix: "", nameSuffix: "", close: "" },
    arguments: { start: "", end: "", namePrefix: "", nameSuffix: "", valuePrefix: "", valueSuffix: "" },
    callId: { pos: "none", prefix: "", suffix: "" },
  },
};
const arena = buildChatOutputParser(FORMAT, { tools: TOOLS, toolChoice: "auto", parallelToolCalls: true, extractReasoning: true, generationPrompt: "" });
const refParams = { format: "peg-native", generation_prompt: "", parser_text: JSON.stringify(arena.toJSON()) };

// ---------------------------------------------------------------- synthetic output
/** xorshift32: deterministic, so every run (and both engines) sees the same stream. */
function rng(s) {
  let x = s >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}
const enc = new TextEncoder();
const byteLen = (s) => enc.encode(s).length;
const REASONING = [
  "The user wants the parser rewritten. ",
  "First I should read how the stream is fed; ",
  "需要先检查输入的字节边界。",
  "Edge case: a quote \" or a brace { inside a string. ",
  "Emoji 🙂🚀 take four bytes each, ",
  "so a token can end inside one. ",
  "Then call write_file, and search_code for callers.\n",
];
const CONTENT = ["I'll write the new module now. ", "日本語のテキストも含めます。", "Plan: 1) write, 2) search. ", "Done soon 👍.\n"];
const CODE = [
  "export function feed(piece: Uint8Array): void {\n",
  '  const label = "quoted \\"name\\" here";\n',
  "  if (piece.length === 0) { return; }\n",
  "  // 注释：按字节处理 UTF-8\n",
  "  const re = /\\d+\\s*/g; // backslashes\n",
  "  log(`emoji 🎉 ${piece.length}`);\n",
  "}\n\n",
];
const QUERY = ["callers of feed() ", "in lib/chat ", "\"ChatSession\" ", "with 分块 input "];

/** Text of exactly `bytes` UTF-8 bytes from whole units (each `wrap`ped), padded with ASCII. */
function fill(units, bytes, rand, wrap = (s) => s) {
  let out = "";
  let len = 0;
  for (;;) {
    const u = wrap(units[Math.floor(rand() * units.length)]);
    const ul = byteLen(u);
    if (len + ul > bytes) break;
    out += u;
    len += ul;
  }
  return out + "x".repeat(bytes - len);
}
const jsonInner = (s) => JSON.stringify(s).slice(1, -1);

/** `n` chunks of 1-8 bytes whose concatenation is a complete output of the format above. */
function makeStream(n, s) {
  const rand = rng(s * 7919 + n);
  const sizesOf = Array.from({ length: n }, () => 1 + Math.floor(rand() * 8));
  const total = sizesOf.reduce((a, b) => a + b, 0);
  const parts = (r, c, a1, a2) =>
    `<think>\n${r}\n</think>\n\n${c}\n<tool_call>\n{"name": "write_file", "arguments": {"path": "src/stream/feed.ts", "content": "${a1}"}}\n</tool_call>\n` +
    `<tool_call>\n{"name": "search_code", "arguments": {"query": "${a2}", "max_results": 20}}\n</tool_call>`;
  const fixed = byteLen(parts("", "", "", ""));
  const room = total - fixed;
  if (room < 40) throw new Error(`${n} tokens: too short for the output skeleton`);
  const r = Math.floor(room * 0.2);
  const c = Math.floor(room * 0.1);
  const a2 = Math.floor(room * 0.05);
  const a1 = room - r - c - a2;
  const text = parts(fill(REASONING, r, rand), fill(CONTENT, c, rand), fill(CODE, a1, rand, jsonInner), fill(QUERY, a2, rand, jsonInner));
  const bytes = enc.encode(text);
  if (bytes.length !== total) throw new Error(`internal: ${bytes.length} != ${total}`);
  const chunks = [];
  let at = 0;
  for (const k of sizesOf) {
    chunks.push(bytes.subarray(at, at + k));
    at += k;
  }
  return { bytes, chunks };
}

/** `n` chunks of 1-8 bytes: a short answer, then one call whose `values` argument is a long integer array. */
function makeArrayStream(n, s) {
  const rand = rng(s * 104729 + n);
  const sizesOf = Array.from({ length: n }, () => 1 + Math.floor(rand() * 8));
  const total = sizesOf.reduce((a, b) => a + b, 0);
  const head = `Storing the series now.\n<tool_call>\n{"name": "store_values", "arguments": {"series": "latency_us", "values": [`;
  const tail = `]}}\n</tool_call>`;
  let values = "";
  let len = byteLen(head) + byteLen(tail);
  for (let i = 0; len < total; i++) {
    const v = `${i ? ", " : ""}${Math.floor(rand() * 100000)}`;
    values += v;
    len += v.length;
  }
  // trim to exactly `total` bytes: drop digits from the last value (keeps it an integer)
  let text = head + values + tail;
  while (byteLen(text) > total) {
    values = values.slice(0, -1);
    if (values.endsWith(" ") || values.endsWith(",")) values = values.replace(/,\s*$/, "");
    text = head + values + tail;
  }
  if (byteLen(text) < total) text = head + values + " ".repeat(total - byteLen(text)) + tail;
  const bytes = enc.encode(text);
  const chunks = [];
  let at = 0;
  for (const k of sizesOf) {
    chunks.push(bytes.subarray(at, at + k));
    at += k;
  }
  return { bytes, chunks: chunks.filter((c) => c.length > 0) };
}

// ---------------------------------------------------------------- TS
function runTs(chunks, tailFrom, fresh) {
  // `fresh`: hide the arena's stream parser, so every feed re-parses from scratch like the reference.
  const parser = fresh ? { parse: (input, o) => arena.parse(input, o) } : arena;
  const session = new ChatSession(chatPlan(parser, {}), { generateToolCallId: (i) => `call_${i}` });
  const t0 = process.cpuUsage();
  let tail = null;
  let errors = 0;
  for (let i = 0; i < chunks.length; i++) {
    if (i === tailFrom) tail = process.cpuUsage();
    errors += session.feed(chunks[i], i).events.length;
  }
  const tailUs = process.cpuUsage(tail);
  const last = session.finish();
  const all = process.cpuUsage(t0);
  errors += last.events.length;
  return { totalMs: (all.user + all.system) / 1000, tailMsPerToken: (tailUs.user + tailUs.system) / 1000 / (chunks.length - tailFrom), message: last.message, errors };
}

// ---------------------------------------------------------------- C++ (harness, one JSON line per request)
const child = spawn(harnessBin, [], { stdio: ["pipe", "pipe", "inherit"] });
const pending = new Map();
let nextId = 1;
createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
  const msg = JSON.parse(line);
  const p = pending.get(msg.id);
  pending.delete(msg.id);
  if (msg.ok) p.resolve(msg.result);
  else p.reject(new Error(`harness: ${msg.error}`));
});
child.on("exit", (code, signal) => {
  for (const p of pending.values()) p.reject(new Error(`harness exited (${signal ?? code})`));
});
function call(cmd, payload) {
  const id = nextId++;
  child.stdin.write(JSON.stringify({ id, cmd, ...payload }) + "\n");
  return new Promise((res, rej) => pending.set(id, { resolve: res, reject: rej }));
}
const b64 = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("base64");
function concat(chunks) {
  const len = chunks.reduce((a, c) => a + c.length, 0);
  const out = new Uint8Array(len);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** CPU ns of steps [from, to) (and of the final complete parse when `to` is the end). */
async function refWindow(chunks, from, to) {
  const head = from > 0 ? [concat(chunks.slice(0, from))] : [];
  const sent = [...head, ...chunks.slice(from, to)];
  const r = await call("chat.stream", { params: refParams, chunks_b64: sent.map(b64), filter_tool_calls: true, timing: true });
  if (r.error !== undefined && r.error_step < sent.length) throw new Error(`reference stream error at step ${from + r.error_step - head.length}: ${r.error}`);
  const ns = r.step_cpu_ns;
  const steps = ns.slice(head.length, sent.length);
  const final = to === chunks.length ? (r.final ? { ns: ns[sent.length], message: r.final.message } : { error: r.error }) : null;
  return { steps, final };
}

/** Window [a, b) of the group [lo, hi) that the sampled estimate measures. */
function sampleWindow(lo, hi, w) {
  const a = Math.max(lo, Math.floor((lo + hi - w) / 2));
  return [a, Math.min(a + w, hi)];
}
const GROUP = 400; // steps per request (bounds the JSON of one answer) and per sampling group
const WINDOW = 40; // steps measured per group when sampling

async function runRef(chunks, tailFrom) {
  const n = chunks.length;
  const sum = (xs) => xs.reduce((x, y) => x + y, 0);
  const sampled = tailFrom > fullMax;
  let bodyNs = 0;
  let estimateNs = 0; // the sampled estimate, also computed on fully measured runs as a check
  for (let lo = 0; lo < tailFrom; lo += GROUP) {
    const hi = Math.min(lo + GROUP, tailFrom);
    const [a, b] = sampleWindow(lo, hi, WINDOW);
    if (sampled) {
      const steps = (await refWindow(chunks, a, b)).steps;
      bodyNs += (sum(steps) / steps.length) * (hi - lo);
    } else {
      const steps = (await refWindow(chunks, lo, hi)).steps;
      bodyNs += sum(steps);
      const win = steps.slice(a - lo, b - lo);
      estimateNs += (sum(win) / win.length) * (hi - lo);
    }
  }
  let tailNs = 0;
  let final = null;
  for (let a = tailFrom; a < n; a += GROUP) {
    const r = await refWindow(chunks, a, Math.min(a + GROUP, n));
    tailNs += sum(r.steps);
    final = r.final ?? final;
  }
  if (!final || final.error !== undefined) throw new Error(`reference final parse failed: ${final?.error}`);
  return {
    totalMs: (bodyNs + tailNs + final.ns) / 1e6,
    tailMsPerToken: tailNs / 1e6 / (n - tailFrom),
    sampled,
    // how far the sampled estimate is from the measured total (fully measured runs only)
    samplingError: sampled ? null : (estimateNs + tailNs + final.ns) / (bodyNs + tailNs + final.ns) - 1,
    message: final.message,
  };
}

/** Best of `reps` runs (CPU time on a shared machine: a burst of load elsewhere only adds). */
async function best(reps, run) {
  let out = null;
  for (let i = 0; i < reps; i++) {
    const r = await run(i);
    if (out === null) out = { ...r };
    else {
      out.totalMs = Math.min(out.totalMs, r.totalMs);
      out.tailMsPerToken = Math.min(out.tailMsPerToken, r.tailMsPerToken);
      if (r.samplingError !== undefined && r.samplingError !== null) out.samplingError = r.samplingError;
    }
    out.runs = i + 1;
  }
  return out;
}

/** Same message on both sides (arguments compared as JSON), so both did the same work. */
function sameMessage(ts, ref) {
  const norm = (content, reasoning, calls) => ({ content, reasoning, calls: calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) })) });
  return isDeepStrictEqual(
    norm(ts.content, ts.reasoning_content, ts.tool_calls.map((c) => c.function)),
    norm(ref.content, ref.reasoning_content, ref.tool_calls),
  );
}

// ---------------------------------------------------------------- run
const loadBefore = loadavg();
const rows = [];
const arrayRows = [];
const started = performance.now();
{
  // warm up the JIT on a whole short stream (both variants), else the first size pays for compiling
  const warm = makeStream(1000, seed + 1).chunks;
  for (let i = 0; i < 3; i++) for (const fresh of [false, true]) runTs(warm, 950, fresh);
}
/** More repetitions for short streams: their tail is a few hundred microseconds of CPU. */
const repsFor = (n) => Math.max(tsReps, Math.min(15, Math.round((tsReps * 4000) / n)));
const tailStart = (n) => n - Math.max(1, Math.ceil(n * 0.05));

/**
 * The TS session and the fresh variant, taking turns (which goes first alternates), best of each.
 * `freshReps` 0 leaves the fresh variant out.
 */
async function tsPair(chunks, tailFrom, reps, freshReps = reps) {
  const runs = { false: [], true: [] };
  for (let i = 0; i < reps; i++) for (const fresh of i % 2 ? [true, false] : [false, true]) if (!fresh || i < freshReps) runs[fresh].push(runTs(chunks, tailFrom, fresh));
  return { ts: await best(reps, (i) => runs.false[i]), tsFresh: freshReps > 0 ? await best(freshReps, (i) => runs.true[i]) : null };
}
/** The array workload's fresh re-parse is quadratic with a large constant (~60 s at 16k): measured up to 4k tokens. */
const ARRAY_FRESH_MAX = 4000;

for (const n of sizes) {
  const { bytes, chunks } = makeStream(n, seed);
  const tailFrom = tailStart(n);
  log(`${n} tokens (${bytes.length} bytes): TS...`);
  const { ts, tsFresh } = await tsPair(chunks, tailFrom, repsFor(n));
  log(`${n} tokens: C++...`);
  const ref = await best(refReps, () => runRef(chunks, tailFrom));
  const same = sameMessage(ts.message, ref.message) && sameMessage(tsFresh.message, ref.message);
  if (!same) throw new Error(`${n} tokens: final messages differ between TS and the reference`);
  if (ts.errors + tsFresh.errors > 0) throw new Error(`${n} tokens: the TS session reported parse errors`);
  rows.push({ tokens: n, bytes: bytes.length, ts, tsFresh, ref });
}
if (withArray) {
  for (const n of sizes) {
    const { bytes, chunks } = makeArrayStream(n, seed);
    log(`array workload, ${n} tokens (${bytes.length} bytes): TS...`);
    const { ts, tsFresh } = await tsPair(chunks, tailStart(chunks.length), repsFor(n), n <= ARRAY_FRESH_MAX ? repsFor(n) : 0);
    if (ts.message.tool_calls.length !== 1 || (tsFresh !== null && !sameMessage(ts.message, { ...tsFresh.message, tool_calls: tsFresh.message.tool_calls.map((c) => c.function) }))) {
      throw new Error(`array workload, ${n} tokens: the two TS variants disagree`);
    }
    if (ts.errors + (tsFresh?.errors ?? 0) > 0) throw new Error(`array workload, ${n} tokens: the TS session reported parse errors`);
    arrayRows.push({ tokens: n, bytes: bytes.length, ts, tsFresh });
  }
}
child.stdin.end();
const loadAfter = loadavg();
const wallS = (performance.now() - started) / 1000;

// the goals: flat tail (longest / shortest), the longest stream's total, reference / session
const first = rows[0];
const last = rows[rows.length - 1];
/** tail per token of the longest over the shortest stream measured with `key` */
const flat = (rs, key) => {
  const m = rs.filter((r) => r[key] !== null);
  return m.length > 1 ? m[m.length - 1][key].tailMsPerToken / m[0][key].tailMsPerToken : null;
};
const ratios = {
  longest: last.tokens,
  shortest: first.tokens,
  tail_growth: { ts_session: flat(rows, "ts"), ts_fresh_reparse: flat(rows, "tsFresh"), reference: flat(rows, "ref") },
  longest_total_ms: { ts_session: last.ts.totalMs, ts_fresh_reparse: last.tsFresh.totalMs, reference: last.ref.totalMs },
  reference_over_session_total: last.ref.totalMs / last.ts.totalMs,
  array_tail_growth: arrayRows.length > 1 ? { ts_session: flat(arrayRows, "ts"), ts_fresh_reparse: flat(arrayRows, "tsFresh") } : null,
};

const f = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const fm = (x) => (x >= 1 ? x.toFixed(2) : x >= 0.01 ? x.toFixed(3) : x.toFixed(4));
const fr = (x) => (x === null ? "n/a" : `x${x.toFixed(2)}`);
if (asJson) {
  console.log(
    JSON.stringify(
      {
        seed,
        load_average: { before: loadBefore, after: loadAfter },
        wall_s: wallS,
        rows: rows.map((r) => ({
          tokens: r.tokens,
          bytes: r.bytes,
          ts_stream_parser: { total_ms: r.ts.totalMs, tail_ms_per_token: r.ts.tailMsPerToken },
          ts_fresh_reparse: { total_ms: r.tsFresh.totalMs, tail_ms_per_token: r.tsFresh.tailMsPerToken },
          reference: { total_ms: r.ref.totalMs, tail_ms_per_token: r.ref.tailMsPerToken, total_sampled: r.ref.sampled, sampling_estimate_error: r.ref.samplingError },
          runs: { ts: r.ts.runs, reference: r.ref.runs },
          final_messages_equal: true,
        })),
        array_rows: arrayRows.map((r) => ({
          tokens: r.tokens,
          bytes: r.bytes,
          ts_stream_parser: { total_ms: r.ts.totalMs, tail_ms_per_token: r.ts.tailMsPerToken },
          ts_fresh_reparse: r.tsFresh === null ? null : { total_ms: r.tsFresh.totalMs, tail_ms_per_token: r.tsFresh.tailMsPerToken },
          runs: { ts: r.ts.runs },
        })),
        ratios,
      },
      null,
      2,
    ),
  );
} else {
  console.log(`streaming parse + diff CPU time (seed ${seed}); load average before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`);
  console.log("| tokens | bytes | TS session, total | TS fresh re-parse, total | C++ reference, total | TS / TS fresh / C++ per token at the tail (last 5%) |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const r of rows) {
    console.log(
      `| ${r.tokens} | ${r.bytes} | ${f(r.ts.totalMs)} ms | ${f(r.tsFresh.totalMs)} ms | ${f(r.ref.totalMs)} ms${r.ref.sampled ? " (sampled)" : ""} | ${fm(r.ts.tailMsPerToken)} / ${fm(r.tsFresh.tailMsPerToken)} / ${fm(r.ref.tailMsPerToken)} ms |`,
    );
  }
  if (arrayRows.length > 0) {
    console.log("");
    console.log("one call with a long integer array argument (TS only):");
    console.log("| tokens | bytes | TS session, total | TS fresh re-parse, total | TS / TS fresh per token at the tail |");
    console.log("| --- | --- | --- | --- | --- |");
    for (const r of arrayRows) {
      const fresh = r.tsFresh === null ? ["not run", "—"] : [`${f(r.tsFresh.totalMs)} ms`, fm(r.tsFresh.tailMsPerToken)];
      console.log(`| ${r.tokens} | ${r.bytes} | ${f(r.ts.totalMs)} ms | ${fresh[0]} | ${fm(r.ts.tailMsPerToken)} / ${fresh[1]} ms |`);
    }
    console.log(`(the fresh re-parse of this workload runs only up to ${ARRAY_FRESH_MAX} tokens: it is quadratic, about a minute per run at 16k)`);
  }
  console.log("");
  const t = ratios.tail_growth;
  console.log(`tail per token at ${ratios.longest} / at ${ratios.shortest} tokens: TS session ${fr(t.ts_session)} (goal <= 1.5), TS fresh re-parse ${fr(t.ts_fresh_reparse)}, C++ reference ${fr(t.reference)}`);
  if (ratios.array_tail_growth !== null) {
    const a = arrayRows.filter((r) => r.tsFresh !== null);
    const freshSpan = a.length > 1 ? ` (${a[a.length - 1].tokens} / ${a[0].tokens})` : "";
    console.log(`  array workload: TS session ${fr(ratios.array_tail_growth.ts_session)}, TS fresh re-parse ${fr(ratios.array_tail_growth.ts_fresh_reparse)}${freshSpan}`);
  }
  console.log(`${ratios.longest}-token stream, total: TS session ${f(last.ts.totalMs)} ms (goal <= 300 ms), TS fresh ${f(last.tsFresh.totalMs)} ms, C++ ${f(last.ref.totalMs)} ms; C++ / TS session ${fr(ratios.reference_over_session_total)} (goal >= 8)`);
  const pf = (ok) => (ok ? "PASS" : "FAIL");
  console.log(`${pf(t.ts_session <= 1.5)}  tail per token at ${ratios.longest} / at ${ratios.shortest} tokens <= 1.5: ${fr(t.ts_session)}`);
  console.log(`${pf(last.ts.totalMs <= 300)}  ${ratios.longest}-token stream total <= 300 ms: ${f(last.ts.totalMs)} ms`);
  console.log(`${pf(ratios.reference_over_session_total >= 8)}  C++ reference / TS session total >= 8: ${fr(ratios.reference_over_session_total)}`);
  const checks = rows.filter((r) => r.ref.samplingError !== null).map((r) => `${r.tokens}: ${(r.ref.samplingError * 100).toFixed(1)}%`);
  console.log(`best of ${rows.map((r) => r.ts.runs).join("/")} TS / ${refReps} reference runs; final messages identical on both sides; wall ${wallS.toFixed(0)} s`);
  if (checks.length > 0) console.log(`"sampled" = ${WINDOW} of every ${GROUP} steps measured (last 5% in full); that estimate vs the full measurement where both exist: ${checks.join(", ")}`);
}
