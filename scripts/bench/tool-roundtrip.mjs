// The tool-call round trip (issue 22): a corpus of real-world-shaped tool sets that the project
// generates itself (seeded, no download), each ground-truth call rendered into the assistant turn
// by a chat template, then read back by the plan's parser and checked against the plan's tree.
// Shared by test/conformance/tool-roundtrip.test.ts and scripts/bench-toolcalls.mjs; the library
// functions come in as arguments, so the test runs it on lib/ and the script on dist/.
//
// The corpus mimics public function-calling benchmarks: snake_case functions with descriptions,
// string / integer / number (negative, many digits, exponents) / boolean / enum / nested object /
// array (of strings, numbers, objects) parameters, optional parameters left out at random, and
// parallel calls (two or three in one turn). Arguments are written in the schema's order, as models
// trained on rendered histories write them.

/** mulberry32: a small seeded PRNG (deterministic corpora). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VERBS = ["get", "find", "calculate", "search", "create", "update", "convert", "book", "list", "fetch", "set", "send"];
const NOUNS = ["weather", "stock_price", "route", "flight", "hotel", "recipe", "invoice", "mortgage", "reminder", "playlist", "exchange_rate", "calendar_event", "population", "distance"];
const PARAMS = ["location", "city", "query", "amount", "rate", "latitude", "longitude", "unit", "limit", "include_details", "verbose", "tags", "options", "start_date", "currency", "precision", "threshold", "filters", "coordinates", "items", "count", "enabled", "mode", "notes"];
const WORDS = ["Paris", "New York", "San Francisco, CA", "weekly report", "O'Brien", 'say "hi"', "café", "line one\nline two", "a<b", "東京", "x, y", "100%", "multi word value", "tab\there"];
const ENUMS = [["celsius", "fahrenheit"], ["low", "medium", "high"], ["asc", "desc"], ["USD", "EUR", "JPY"]];
const NUMBERS = [-118.2437, 34.0522, 0.5, 3.14159265358979, 1.256e-6, 2.5e10, 1e-9, 99.99, -0.001, 6.02214076e23, 12.5, 0.1];

const pick = (rnd, xs) => xs[Math.floor(rnd() * xs.length)];

function stringSchema(rnd) {
  return { type: "string", description: `The ${pick(rnd, NOUNS).replace(/_/g, " ")} to use` };
}

/** One parameter schema and a generator of values for it. */
function paramSchema(rnd, depth) {
  const r = rnd();
  if (r < 0.26) return { schema: stringSchema(rnd), value: () => pick(rnd, WORDS) };
  if (r < 0.38) return { schema: { type: "integer", description: "A whole number" }, value: () => Math.floor(rnd() * 2000) - 500 };
  if (r < 0.52) return { schema: { type: "number", description: "A real number" }, value: () => pick(rnd, NUMBERS) };
  if (r < 0.66) return { schema: { type: "boolean", description: "Whether to do it" }, value: () => rnd() < 0.5 };
  if (r < 0.76) {
    const e = pick(rnd, ENUMS);
    return { schema: { type: "string", enum: e, description: "One of the listed values" }, value: () => pick(rnd, e) };
  }
  if (r < 0.88 || depth > 0) {
    const items = rnd() < 0.5 ? { type: "string" } : { type: "number" };
    return {
      schema: { type: "array", items, description: "A list" },
      value: () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => (items.type === "string" ? pick(rnd, WORDS) : pick(rnd, NUMBERS))),
    };
  }
  const inner = objectSchema(rnd, depth + 1, 2 + Math.floor(rnd() * 2));
  return { schema: { ...inner.schema, description: "Nested settings" }, value: inner.value };
}

function objectSchema(rnd, depth, n) {
  const names = [...PARAMS].sort(() => rnd() - 0.5).slice(0, n);
  const props = {};
  const gens = [];
  const required = [];
  for (const name of names) {
    const p = paramSchema(rnd, depth);
    props[name] = p.schema;
    const isRequired = rnd() < 0.6;
    if (isRequired) required.push(name);
    gens.push([name, p.value, isRequired]);
  }
  const schema = { type: "object", properties: props, ...(required.length > 0 ? { required } : {}) };
  const value = () => {
    const out = {};
    for (const [name, gen, req] of gens) if (req || rnd() < 0.5) out[name] = gen();
    return out;
  };
  return { schema, value };
}

/**
 * `sets` tool sets of 1-4 functions, each with `callsPerSet` ground-truth turns: one call, or (every
 * third turn) two or three parallel calls. Each case: `{id, tools, calls: [{name, arguments}]}`.
 */
export function makeToolCorpus({ seed = 22, sets = 40, callsPerSet = 3 } = {}) {
  const rnd = prng(seed);
  const cases = [];
  for (let s = 0; s < sets; s++) {
    const nFns = 1 + Math.floor(rnd() * 4);
    const fns = [];
    const used = new Set();
    while (fns.length < nFns) {
      const name = `${pick(rnd, VERBS)}_${pick(rnd, NOUNS)}`;
      if (used.has(name)) continue;
      used.add(name);
      const params = objectSchema(rnd, 0, 1 + Math.floor(rnd() * 5));
      fns.push({ name, params });
    }
    const tools = fns.map((f) => ({ type: "function", function: { name: f.name, description: `${f.name.replace(/_/g, " ")}.`, parameters: f.params.schema } }));
    for (let c = 0; c < callsPerSet; c++) {
      const n = c % 3 === 2 ? 2 + Math.floor(rnd() * 2) : 1;
      const calls = Array.from({ length: n }, () => {
        const f = pick(rnd, fns);
        return { name: f.name, arguments: f.params.value() };
      });
      cases.push({ id: `set${s}-turn${c}`, tools, calls });
    }
  }
  return cases;
}

/** Structural equality of JSON values (object key order ignored, numbers by value). */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

const USER = { role: "user", content: "Please help me with this." };

/**
 * The text the model writes for `calls` under this template: the render with the assistant turn
 * minus the render without it, minus the generation prompt, minus the end-of-turn suffix (shared
 * with a plain reply). null: the template renders the turn some other way.
 */
function renderedTurn(lib, source, tools, calls, plan, now) {
  const generationPrompt = plan.generationPrompt;
  const reply = (ids) => ({
    role: "assistant",
    content: "",
    tool_calls: calls.map((c, i) => ({ id: ids(i), type: "function", function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
  });
  const render = (messages) => lib.renderChatTemplate(source, { messages, tools, add_generation_prompt: false, bos_token: "<s>", eos_token: "</s>", now });
  const base = render([USER]);
  let full;
  try {
    full = render([USER, reply((i) => `call_${i}`)]);
  } catch {
    // Mistral's templates take only ids of 9 letters and digits
    full = render([USER, reply((i) => `call${String(i).padStart(5, "0")}`)]);
  }
  const other = render([USER, { role: "assistant", content: "Zq" }]);
  let start = base.length;
  if (!full.startsWith(base)) {
    // the template adds text after the last user turn only while no assistant turn follows
    // (Command R+'s tool instructions): the turn starts at the generation prompt where they part
    let i = 0;
    while (i < base.length && base[i] === full[i]) i++;
    const at = full.lastIndexOf(generationPrompt, i);
    if (at < 0 || at + generationPrompt.length < i) return null;
    start = at;
  }
  let turn = full.slice(start);
  let reasoningOpen = false;
  if (turn.startsWith(generationPrompt)) turn = turn.slice(generationPrompt.length);
  else {
    // The generation prompt opens a reasoning block (`<think>`, Cohere's `<|START_THINKING|>`,
    // Apriel's "Here are my reasoning steps:") that the history does not show: the model writes the
    // block's end, then what the history shows after the common part (cut back to a marker's end).
    if (plan.thinkingEndTags.length === 0) return null;
    let k = 0;
    while (k < turn.length && k < generationPrompt.length && turn[k] === generationPrompt[k]) k++;
    while (k > 0 && generationPrompt[k - 1] !== ">" && generationPrompt[k - 1] !== "\n") k--;
    if (k === 0) return null;
    turn = turn.slice(k);
    reasoningOpen = true;
  }
  let suffix = 0;
  while (suffix < turn.length && suffix < other.length && turn[turn.length - 1 - suffix] === other[other.length - 1 - suffix]) suffix++;
  return { text: turn.slice(0, turn.length - suffix), suffix: turn.slice(turn.length - suffix), reasoningOpen };
}

// One trailing marker token (an end-of-turn token the sampler stops on), as in grammar-admits-calls.
const TRAILING_MARKER = /\s*(?:<[|｜][^<>]*[|｜]>|<\|[^<>|]+>|<[^<>|]+\|>|<SPECIAL_\d+>|\[[A-Z_]+\]|<[|｜][^<>|｜]*)\s*$/u;

/**
 * What the model may write for a rendered turn: as rendered, trimmed, no empty think block, end
 * markers off; where the generation prompt opens a reasoning block that the history does not show,
 * the block's end first (the model closes its reasoning before it calls).
 */
function candidates(output, plan, suffix = "", reasoningOpen = false) {
  const starts = [output, output.trimStart(), output.replace(/^\s*<think>\s*<\/think>\s*/, "")];
  // the shared end-of-turn suffix may begin with the format's own closing marker (Kimi K3's `<|sep|>`)
  const lead = /^\s*<[|｜][^<>]*[|｜]>/u.exec(suffix);
  if (lead !== null) starts.push(output + lead[0]);
  // ... or the suffix was found inside a marker (`<|calls` + `|>`): complete it
  const tail = /^[^<>\s]*?[|｜]>/u.exec(suffix);
  if (tail !== null && /<[|｜][^<>]*$/u.test(output)) starts.push(output + tail[0]);
  const open = plan.thinkingStartTag;
  if (((open !== "" && plan.generationPrompt.trimEnd().endsWith(open.trimEnd())) || reasoningOpen) && plan.thinkingEndTags.length > 0) {
    for (const s of [...starts]) starts.push(`${plan.thinkingEndTags[0]}${s}`, `${plan.thinkingEndTags[0]}\n\n${s.trimStart()}`);
  }
  const out = [];
  for (const s of starts) {
    let t = s;
    out.push(t);
    for (let k = 0; k < 2 && TRAILING_MARKER.test(t); k++) {
      t = t.replace(TRAILING_MARKER, "");
      out.push(t, t.trimEnd());
    }
  }
  return [...new Set(out)];
}

const encoder = new TextEncoder();

/**
 * Where a lazy grammar starts on `text` as llama.cpp's lazy sampler runs it: after each piece
 * (here one character, the finest tokenization) every trigger is searched over the whole text so
 * far (`llama_grammar_accept_impl`); the first piece where one matches starts the grammar at the
 * match (a word), its first capture group or match (a pattern), or at 0 (a full pattern, anchored
 * to the whole text so far). -1: no trigger fires.
 */
export function lazyStart(text, triggers) {
  const res = triggers.map((t) => (t.type === "pattern" ? new RegExp(t.value, "d") : t.type === "pattern_full" ? new RegExp(`^(?:${t.value.replace(/^\^/, "").replace(/\$$/, "")})$`, "d") : null));
  for (let end = 1; end <= text.length; end++) {
    const sofar = text.slice(0, end);
    for (const [i, t] of triggers.entries()) {
      if (t.type === "word" || t.type === "token") {
        if (sofar.endsWith(t.value)) return end - t.value.length;
        continue;
      }
      const m = res[i].exec(sofar);
      if (m !== null) return m.indices?.[1]?.[0] ?? m.index;
    }
  }
  return -1;
}

/** The plan's lazy grammar (its trigger rules, the GBNF root's alternatives) takes `text` from the trigger on. */
function lazyAdmits(plan, text) {
  const at = lazyStart(text, plan.grammar.triggers);
  if (at < 0) return { fired: false, admitted: false };
  const arena = plan.parser;
  const input = encoder.encode(text.slice(at));
  for (const [, id] of arena.rules) {
    const node = arena.nodes[id];
    if (node.kind !== "rule" || !node.trigger) continue;
    const r = arena.parseFrom(id, input, { partial: false, lossyUtf8: true });
    if (r.type === "success" && r.end === input.length) return { fired: true, admitted: true };
  }
  return { fired: true, admitted: false };
}

/**
 * One output read back: "exact" (same calls, names and arguments), "mismatch" (calls read, some
 * differ), "error" (a parse error: the raw text is kept), or "lost" (fewer calls and no error: the
 * silent loss the issue is about). `admitted`: the plan's tree (the one its GBNF is exported from)
 * matches the whole output, and for a lazy plan its grammar starts on it (lazyStart) and its trigger
 * rules take the rest.
 */
function readBack(lib, plan, text, calls) {
  let outcome;
  let detail = "";
  try {
    const msg = lib.parseChatOutput(plan, text);
    const got = msg.tool_calls;
    if (got.length < calls.length) {
      outcome = "lost";
      detail = `${got.length} of ${calls.length} calls`;
    } else {
      let same = got.length === calls.length;
      for (let i = 0; same && i < calls.length; i++) {
        let args;
        try {
          args = JSON.parse(got[i].function.arguments);
        } catch {
          args = undefined;
        }
        same = got[i].function.name === calls[i].name && jsonEqual(args, calls[i].arguments);
        if (!same) detail = `${got[i].function.name}(${got[i].function.arguments})`;
      }
      outcome = same ? "exact" : "mismatch";
    }
  } catch (e) {
    outcome = "error";
    detail = e.code ?? String(e);
  }
  const input = encoder.encode(plan.generationPrompt + text);
  const r = plan.parser ? plan.parser.parse(input, { partial: false, lossyUtf8: true }) : { type: "fail" };
  let admitted = r.type === "success" && r.end === input.length;
  // a lazy grammar must also start on the output (its trigger fires) and take it from there
  let lazy = null;
  if (admitted && plan.grammar.lazy) {
    lazy = lazyAdmits(plan, text);
    admitted = lazy.admitted;
    if (!lazy.fired) detail = `${detail}${detail === "" ? "" : "; "}lazy grammar never triggered`;
  }
  return { outcome, detail, admitted, lazy };
}

const RANK = { exact: 3, mismatch: 2, error: 1, lost: 0 };

/** The turn names each function at least as often as the calls do (a template that drops parallel calls does not). */
function showsEveryCall(turn, calls) {
  const want = new Map();
  for (const k of calls) want.set(k.name, (want.get(k.name) ?? 0) + 1);
  for (const [name, n] of want) if (turn.split(name).length - 1 < n) return false;
  return true;
}

/**
 * Runs every case through one template. Returns null when the template takes no tools (no tool
 * grammar); else counts per outcome, `unrenderable` (the turn does not show every call's name: the
 * template cannot write what it would parse), `admitted`, and the first failures.
 */
export function roundTripTemplate(lib, source, cases, { extra = {}, now = new Date("2026-01-31T12:00:00Z"), keep = 5 } = {}) {
  const stats = { cases: 0, unrenderable: 0, exact: 0, mismatch: 0, error: 0, lost: 0, admitted: 0, lazy: 0, failures: [] };
  let anyGrammar = false;
  for (const c of cases) {
    let plan;
    try {
      plan = lib.applyChatTemplate(source, { messages: [USER], tools: c.tools, tool_choice: "auto", parallel_tool_calls: c.calls.length > 1, bos_token: "<s>", eos_token: "</s>", now, ...extra });
    } catch {
      return null;
    }
    if (plan.grammar === null) continue;
    anyGrammar = true;
    stats.cases++;
    let turn;
    try {
      turn = renderedTurn(lib, source, c.tools, c.calls, plan, now);
    } catch {
      turn = null;
    }
    if (turn === null || !showsEveryCall(turn.text, c.calls)) {
      stats.unrenderable++;
      continue;
    }
    let best = null;
    for (const text of candidates(turn.text, plan, turn.suffix, turn.reasoningOpen)) {
      const r = readBack(lib, plan, text, c.calls);
      if (best === null || RANK[r.outcome] > RANK[best.outcome] || (r.outcome === best.outcome && r.admitted && !best.admitted)) best = { ...r, text };
      if (r.outcome === "exact" && r.admitted) break;
    }
    stats[best.outcome]++;
    if (best.admitted) stats.admitted++;
    if (plan.grammar.lazy) stats.lazy++;
    if ((best.outcome !== "exact" || !best.admitted) && stats.failures.length < keep) {
      stats.failures.push({ id: c.id, outcome: best.outcome, admitted: best.admitted, detail: best.detail, text: best.text.slice(0, 400) });
    }
  }
  return anyGrammar ? stats : null;
}

/** Exact share of the renderable cases (1 when there are none). */
export function exactRate(s) {
  const n = s.cases - s.unrenderable;
  return n === 0 ? 1 : s.exact / n;
}
