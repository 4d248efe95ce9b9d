#!/usr/bin/env node
// npm run bench:schemas -- --corpus <dir> — JSONSchemaBench's MaskBench protocol through our grammar
// engine (docs/json-schema.md, "Benchmark"). For each schema file ({schema, tests: [{data, valid}]})
// and each compiler: compile the schema to GBNF, serialize every instance the way Python's
// json.dumps does by default (", " and ": " separators, ASCII escapes, floats as repr), tokenize it
// with the Llama 3 vocabulary and feed it token by token (test/native-grammar's schema.check); a
// schema passes when its grammar compiles, every valid instance is accepted and every invalid one
// rejected. Compilers: ours (default mode, strict), the same with propertyOrder: "any"
// (strict-any), ours with unsupported: "ignore", ours in reference mode, and llama.cpp's
// vendored examples/json_schema_to_grammar.py.
//
//   node scripts/bench-schemas.mjs --corpus DIR [--every N] [--limit N] [--compilers a,b]
//        [--no-mask-times] [--fresh] [--json] [--out FILE] [--list-failures N] [--timeout-ms N] [--slowest N]
//        [--slow-masks-us N]   what the masks of at least N µs did (the mask engine's counters), summed
//        [--no-shared-entries]  no mask entries shared between schemas (each grammar measured cold)
//        [--slow-masks-out FILE]  those masks one by one, as JSON (schema file, token index, counters)
import { spawn } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { root, startGrammarProgram } from "./bench-mask.mjs";

const log = (...a) => console.error("[bench-schemas]", ...a);
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const corpus = opt("corpus");
if (!corpus) {
  console.error("usage: bench-schemas.mjs --corpus <maskbench/data dir> [--every N] [--limit N] [--compilers strict,strict-any,ignore,reference,reference-ignore,llamacpp]");
  process.exit(2);
}
const every = Number(opt("every", "1"));
const limit = Number(opt("limit", "Infinity"));
const compilers = opt("compilers", "strict,ignore,llamacpp").split(",");
const timeMasks = !args.includes("--no-mask-times");
// --fresh: a new grammar state per instance (each pays the cold first masks); by default one state
// per schema is reset between its instances, as the addon's grammar pool reuses a finished
// generation's state (and as llguidance shares a compiled grammar between matchers)
const fresh = args.includes("--fresh");
const slowMaskUs = Number(opt("slow-masks-us", "0"));
// the model's table of mask entries shared between grammars (native/grammar/shared-entries.h) is on
// in the addon; --no-shared-entries measures every schema as if it were the first
const sharedEntries = !args.includes("--no-shared-entries");
const slowMasks = [];
const listFailures = Number(opt("list-failures", "0"));
const vocab = join(root, "vendor", "llama.cpp", "models", "ggml-vocab-llama-bpe.gguf");

const { compileJsonSchema } = await import(pathToFileURL(join(root, "dist", "json-schema", "index.js")).href);

// ---- Python's json.dumps(value) on the file's own text (numbers keep Python's int/float split) ----

function pyFloat(x) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant, expText] = x.toExponential().split("e");
  const exp = Number(expText);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  let out;
  if (exp >= -4 && exp < 16) {
    // repr uses fixed notation for 1e-4 <= |x| < 1e16 (float_repr_style 'short', format 'r')
    if (exp < 0) out = `0.${"0".repeat(-exp - 1)}${digits}`;
    else if (digits.length <= exp + 1) out = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
    else out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    const m = digits.length === 1 ? digits : `${digits[0]}.${digits.slice(1)}`;
    out = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return neg ? `-${out}` : out;
}

function pyString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Parses JSON text into a tree whose numbers keep their lexeme ({num: "1.0"}). */
function parseKeepingNumbers(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const entries = [];
      ws();
      if (text[i] === "}") {
        i++;
        return { obj: entries };
      }
      for (;;) {
        ws();
        const k = value();
        ws();
        i++; // :
        const v = value();
        // Python's dict keeps the last value of a duplicated key at the first key's place
        const at = entries.findIndex((e) => e[0] === k);
        if (at >= 0) entries[at][1] = v;
        else entries.push([k, v]);
        ws();
        if (text[i++] === "}") return { obj: entries };
      }
    }
    if (c === "[") {
      i++;
      const items = [];
      ws();
      if (text[i] === "]") {
        i++;
        return { arr: items };
      }
      for (;;) {
        items.push(value());
        ws();
        if (text[i++] === "]") return { arr: items };
      }
    }
    if (c === '"') {
      const start = i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i));
    }
    const m = /^(-?\d+)(\.\d+)?([eE][-+]?\d+)?|^(true|false|null|NaN|-?Infinity)/.exec(text.slice(i, i + 400));
    if (m === null) throw new Error(`bad JSON at ${i}`);
    i += m[0].length;
    if (m[4] !== undefined) return m[4] === "true" ? true : m[4] === "false" ? false : m[4] === "null" ? null : { num: m[4] };
    return { num: m[2] === undefined && m[3] === undefined ? BigInt(m[1]).toString() : pyFloat(Number(m[0])) };
  };
  return value();
}

function pyDumps(v) {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "string") return pyString(v);
  if ("num" in v) return v.num;
  if ("arr" in v) return `[${v.arr.map(pyDumps).join(", ")}]`;
  return `{${v.obj.map(([k, x]) => `${pyString(k)}: ${pyDumps(x)}`).join(", ")}}`;
}

/** The raw text of each `tests[i].data` member, re-serialized like Python. */
function instancesOf(fileText) {
  const doc = parseKeepingNumbers(fileText);
  const tests = doc.obj.find(([k]) => k === "tests")?.[1]?.arr ?? [];
  return tests.map((t) => {
    const get = (key) => t.obj.find(([k]) => k === key)?.[1];
    return { valid: get("valid") === true, text: pyDumps(get("data")) };
  });
}

// ---- llama.cpp's converter (vendored Python), one long-lived process ----

function startPythonConverter() {
  const code = `
import sys, json
sys.path.insert(0, ${JSON.stringify(join(root, "vendor", "llama.cpp", "examples"))})
sys.setrecursionlimit(10000)
from json_schema_to_grammar import SchemaConverter
for line in sys.stdin:
    schema = json.loads(line)
    try:
        c = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        s = c.resolve_refs(schema, "")
        c.visit(s, "")
        print(json.dumps({"gbnf": c.format_grammar()}), flush=True)
    except BaseException as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)[:300]}), flush=True)
`;
  let child = null;
  let pending = null;
  const start = () => {
    child = spawn("python3", ["-c", code], { stdio: ["pipe", "pipe", "ignore"] });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const p = pending;
      pending = null;
      p?.(JSON.parse(line));
    });
  };
  start();
  return {
    /** One schema; a converter that takes over `timeoutMs` is killed (a timeout, as MaskBench counts it). */
    convert(schema, timeoutMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          pending = null;
          child.kill("SIGKILL");
          start();
          resolve({ error: "timeout", timeout: true });
        }, timeoutMs);
        pending = (r) => {
          clearTimeout(timer);
          resolve(r);
        };
        child.stdin.write(JSON.stringify(schema) + "\n");
      });
    },
    close: () => child.stdin.end(),
  };
}

// ---- the run ----

const splitOf = (file) => file.replace(/(---.*|_\d+)\.json$/, "").replace(/^BFCL_.*/, "BFCL");
const files = readdirSync(corpus)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .filter((_, i) => i % every === 0)
  .slice(0, limit);
log(`${files.length} schema files, compilers ${compilers.join(", ")}, load ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);

const program = await startGrammarProgram();
const python = compilers.includes("llamacpp") ? startPythonConverter() : null;

const compile = {
  strict: (s) => compileJsonSchema(s).gbnf,
  "strict-any": (s) => compileJsonSchema(s, { propertyOrder: "any" }).gbnf,
  ignore: (s) => compileJsonSchema(s, { unsupported: "ignore" }).gbnf,
  reference: (s) => compileJsonSchema(s, { schemaMode: "reference" }).gbnf,
  "reference-ignore": (s) => compileJsonSchema(s, { schemaMode: "reference", unsupported: "ignore" }).gbnf,
};

const stats = Object.fromEntries(compilers.map((c) => [c, { perSplit: {}, compileMs: [], maskUs: [], refused: {}, failures: [], perFile: [] }]));
const slowest = Number(opt("slowest", "0"));
const row = (st, split) => (st.perSplit[split] ??= { schemas: 0, passing: 0, compileError: 0, validRejected: 0, invalidAccepted: 0, engineError: 0, timeouts: 0 });
const timeoutMs = Number(opt("timeout-ms", "20000"));

let done = 0;
for (const file of files) {
  const text = readFileSync(join(corpus, file), "utf8");
  const schema = JSON.parse(text).schema;
  const instances = instancesOf(text);
  const split = splitOf(file);
  for (const c of compilers) {
    const st = stats[c];
    const r = row(st, split);
    r.schemas++;
    let gbnf;
    const t0 = performance.now();
    try {
      if (c === "llamacpp") {
        const out = await python.convert(schema, timeoutMs);
        if (out.timeout) {
          r.timeouts++;
          continue;
        }
        if (out.error) throw new Error(out.error);
        gbnf = out.gbnf;
      } else {
        gbnf = compile[c](schema);
      }
    } catch (e) {
      r.compileError++;
      // the refused keyword: the last token of the error's JSON pointer (`#` when the whole grammar is refused)
      const last = typeof e.where === "string" ? e.where.split("/").pop() : undefined;
      const key = e.code === undefined ? "other" : `${e.code === "ERR_SCHEMA_INVALID" ? "invalid:" : ""}${last === undefined || /^\d+$/.test(last) ? e.code : last}`;
      st.refused[key] = (st.refused[key] ?? 0) + 1;
      if (st.failures.length < listFailures) st.failures.push({ file, kind: "compile", message: String(e.message).slice(0, 300) });
      continue;
    }
    const compileMs = performance.now() - t0;
    let res;
    try {
      res = await program.call("schema.check", { path: vocab, gbnf, instances: instances.map((x) => x.text), timeMask: timeMasks && c === compilers[0], fresh, sharedEntries, ...(slowMaskUs > 0 ? { slowMaskUs } : {}) });
    } catch (e) {
      res = { invalid: e.message };
    }
    if (res.invalid !== undefined) {
      r.engineError++;
      if (st.failures.length < listFailures) st.failures.push({ file, kind: "engine", message: String(res.invalid).slice(0, 300) });
      continue;
    }
    // schema to ready grammar: our compile plus the engine's parse of the grammar (its first, cold
    // Create; also for a schema with no instances). Until session 11 this was the mean of the first
    // Create and the cheap Resets after it, and 0 with no instances: it read too low.
    const createMs = res.firstCreateMs;
    st.compileMs.push(compileMs + createMs);
    if (res.slowMasks) for (const m of res.slowMasks) slowMasks.push({ file, ...m });
    let maskMax = 0;
    for (const us of res.maskUs) {
      st.maskUs.push(us);
      if (us > maskMax) maskMax = us;
    }
    // where the time goes, per schema: our TS compile, the engine's grammar parse, the worst mask
    if (slowest > 0) st.perFile.push({ file, tsMs: +compileMs.toFixed(2), createMs: +createMs.toFixed(2), maskMaxUs: +maskMax.toFixed(0), gbnfBytes: gbnf.length });
    let ok = true;
    let vr = false;
    let ia = false;
    res.results.forEach((x, i) => {
      if (instances[i].valid && !x.accepted) vr = true;
      if (!instances[i].valid && x.accepted) ia = true;
      if (instances[i].valid !== x.accepted && st.failures.length < listFailures) {
        st.failures.push({ file, kind: instances[i].valid ? "valid-rejected" : "invalid-accepted", at: x.at, text: instances[i].text.slice(0, 300) });
      }
    });
    if (vr) r.validRejected++;
    if (ia) r.invalidAccepted++;
    ok = !vr && !ia;
    if (ok) r.passing++;
  }
  if (++done % 500 === 0) log(`${done}/${files.length}`);
}
program.close();
python?.close();

const pct = (xs, p) => {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const summary = {};
for (const c of compilers) {
  const st = stats[c];
  const total = { schemas: 0, passing: 0, compileError: 0, validRejected: 0, invalidAccepted: 0, engineError: 0, timeouts: 0 };
  for (const r of Object.values(st.perSplit)) for (const k of Object.keys(total)) total[k] += r[k];
  summary[c] = {
    total,
    perSplit: st.perSplit,
    compileMs: { p50: pct(st.compileMs, 50), p90: pct(st.compileMs, 90), p99: pct(st.compileMs, 99), max: pct(st.compileMs, 100) },
    maskUs: st.maskUs.length === 0 ? null : { tokens: st.maskUs.length, p50: pct(st.maskUs, 50), p99: pct(st.maskUs, 99), p999: pct(st.maskUs, 99.9), max: pct(st.maskUs, 100) },
    refused: Object.fromEntries(Object.entries(st.refused).sort((a, b) => b[1] - a[1])),
    failures: st.failures,
    slowestCompile: [...st.perFile].sort((a, b) => b.tsMs + b.createMs - a.tsMs - a.createMs).slice(0, slowest),
    slowestMask: [...st.perFile].sort((a, b) => b.maskMaxUs - a.maskMaxUs).slice(0, slowest),
  };
}
const out = { files: files.length, every, load: loadavg(), summary };
if (opt("out")) writeFileSync(opt("out"), JSON.stringify(out, null, 1));
if (args.includes("--json")) {
  console.log(JSON.stringify(out, null, 1));
} else {
  const f = (x) => (x === null ? "-" : x.toFixed(2));
  for (const c of compilers) {
    const s = summary[c];
    console.log(`\n== ${c}: ${s.total.passing}/${s.total.schemas} passing`);
    console.log("split               schemas  passing  compile-err  valid-rejected  invalid-accepted  engine-err  timeouts");
    for (const [split, r] of [...Object.entries(s.perSplit).sort(), ["TOTAL", s.total]]) {
      console.log(
        `${split.padEnd(20)}${String(r.schemas).padStart(7)}${String(r.passing).padStart(9)}${String(r.compileError).padStart(13)}${String(r.validRejected).padStart(16)}${String(r.invalidAccepted).padStart(18)}${String(r.engineError).padStart(12)}${String(r.timeouts).padStart(10)}`,
      );
    }
    console.log(`compile ms p50 ${f(s.compileMs.p50)} p90 ${f(s.compileMs.p90)} p99 ${f(s.compileMs.p99)} max ${f(s.compileMs.max)}`);
    if (s.maskUs) console.log(`mask us/token (${s.maskUs.tokens} tokens) p50 ${f(s.maskUs.p50)} p99 ${f(s.maskUs.p99)} p99.9 ${f(s.maskUs.p999)} max ${f(s.maskUs.max)}`);
    console.log(`refused: ${JSON.stringify(s.refused)}`);
    for (const x of s.failures) console.log("  ", JSON.stringify(x));
    if (slowest > 0) {
      console.log("slowest to compile (ts ms + engine parse ms):");
      for (const x of s.slowestCompile) console.log("  ", JSON.stringify(x));
      console.log("slowest single mask:");
      for (const x of s.slowestMask) console.log("  ", JSON.stringify(x));
    }
  }
  if (slowMaskUs > 0) {
    const kinds = { "built a cache entry": (m) => m.entries > 0, "runtime walks only": (m) => m.entries === 0 };
    console.log(`\nmasks of at least ${slowMaskUs} µs: ${slowMasks.length}`);
    for (const [kind, is] of Object.entries(kinds)) {
      const ms = slowMasks.filter(is);
      if (ms.length === 0) continue;
      const mean = (k) => (ms.reduce((a, m) => a + m[k], 0) / ms.length).toFixed(0);
      console.log(`  ${kind}: ${ms.length} masks, mean ${mean("us")} µs, entries ${mean("entries")}, entry nodes ${mean("entryNodes")}, runtime nodes ${mean("runtimeNodes")}, continuations ${mean("continuations")}, memo hits ${mean("memoHits")}, stubs ${mean("stubs")}, shared hits ${mean("sharedHits")}, local hits ${mean("localHits")}, one-frame entries ${mean("shallowEntries")} (nodes ${mean("shallowNodes")})`);
    }
    const byFile = new Map();
    for (const m of slowMasks) byFile.set(m.file, (byFile.get(m.file) ?? 0) + 1);
    const slowOut = opt("slow-masks-out");
    if (slowOut) writeFileSync(slowOut, JSON.stringify(slowMasks));
    console.log(`  most in: ${[...byFile.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([f, n]) => `${f} ${n}`).join(", ")}`);
  }
  console.log(`\nload ${loadavg().map((x) => x.toFixed(2)).join(" ")} (provisional on a shared machine)`);
}
