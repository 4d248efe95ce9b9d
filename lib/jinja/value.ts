/**
 * The value model the template evaluator works on. It follows llama.cpp's Jinja runtime
 * (`common/jinja/value.h`), not @huggingface/jinja's, because prompts must come out byte-identical
 * to the reference: integers and floats are distinct, objects keep insertion order and accept any
 * hashable key (integers too), `None` and `Undefined` are distinct, tuples are immutable arrays.
 *
 * Every value carries optional usage stats; the capability probe (caps.ts) reads them to learn
 * which parts of its input a template touched, as the reference's `caps_get` does. Strings carry
 * input marks (marks.ts); the functions that build strings here keep them, and charge the active
 * render budget (limits.ts) for the work, so walking a huge or self-referencing value is a coded
 * limit error rather than a hang or a stack overflow.
 */
import { budgetPoint, chargeAgain, checkDepth, checkItems, checkLength, spend, spendRead, spendString } from "./limits.js";
import { type Marks, MarkedBuilder, allMarked, isMarkedAt, runs } from "./marks.js";

export interface ValueStats {
  used: boolean;
  ops: Set<string>;
}

interface Base {
  stats?: ValueStats;
}

export type JValue =
  | (Base & { kind: "undefined"; hint: string })
  | (Base & { kind: "none" })
  | (Base & { kind: "bool"; v: boolean })
  | (Base & { kind: "int"; v: number })
  | (Base & { kind: "float"; v: number })
  | (Base & { kind: "string"; v: string; m?: Marks })
  | (Base & { kind: "array"; items: JValue[]; tuple: boolean })
  | (Base & { kind: "object"; entries: Map<string, [JValue, JValue]>; builtins: boolean })
  | (Base & { kind: "func"; name: string; fn: (args: FuncArgs) => JValue; self?: JValue })
  | (Base & { kind: "kwarg"; key: string; value: JValue });

export type Kind = JValue["kind"];
export type ValueOf<K extends Kind> = Extract<JValue, { kind: K }>;

/** Arguments of a builtin call: positional values (kwargs are `kwarg` values in the list). */
export interface FuncArgs {
  name: string;
  args: JValue[];
  rt: RuntimeHooks;
}

/** What builtins need from the running evaluator. */
export interface RuntimeHooks {
  /** Whether usage stats are being collected (capability probing). */
  stats: boolean;
  /** The time `strftime_now` formats. */
  now: Date;
}

/** An error raised by template code or a builtin; becomes ERR_TEMPLATE_RENDER at the API edge. */
export class TemplateRuntimeError extends Error {
  override name = "TemplateRuntimeError";
}

/** `raise_exception(...)` from the template itself. */
export class TemplateRaisedError extends TemplateRuntimeError {
  override name = "TemplateRaisedError";
}

// ---- constructors ------------------------------------------------------------------------------

export const undef = (hint = ""): JValue => ({ kind: "undefined", hint });
export const none = (): JValue => ({ kind: "none" });
export const bool = (v: boolean): JValue => ({ kind: "bool", v });
export const int = (v: number): JValue => ({ kind: "int", v: Math.trunc(v) });
export const float = (v: number): JValue => ({ kind: "float", v });
export const str = (v: string, m?: Marks): JValue => (m !== undefined && m.length > 0 ? { kind: "string", v, m } : { kind: "string", v });
/** A string built by the template: its length is checked against the budget and charged. */
export function built(v: string, m?: Marks): JValue {
  spendString(v.length);
  return str(v, m);
}
/** The marks of a string value (undefined for anything else). */
export const marksOf = (v: JValue): Marks | undefined => (v.kind === "string" ? v.m : undefined);
export const arr = (items: JValue[], tuple = false): JValue => ({ kind: "array", items, tuple });
export const func = (name: string, fn: (args: FuncArgs) => JValue, self?: JValue): JValue =>
  self === undefined ? { kind: "func", name, fn } : { kind: "func", name, fn, self };

export function obj(pairs: Iterable<[JValue, JValue]> = [], builtins = true): ValueOf<"object"> {
  const o: ValueOf<"object"> = { kind: "object", entries: new Map(), builtins };
  for (const [k, v] of pairs) objSet(o, k, v);
  return o;
}

export function is<K extends Kind>(v: JValue, kind: K): v is ValueOf<K> {
  return v.kind === kind;
}

export const isNumeric = (v: JValue): v is ValueOf<"int" | "float"> => v.kind === "int" || v.kind === "float";

// ---- object keys -------------------------------------------------------------------------------

/**
 * Map key of an object key. A string key is the string itself (no concatenation, and V8 keeps its
 * hash): the hot path of every member access. Any other key is NUL + its typed key, and a string
 * that itself starts with NUL gets one more, so the mapping stays one-to-one.
 */
export function hashKey(key: JValue): string {
  if (key.kind === "string") {
    spendRead(key.v.length);
    return key.v.charCodeAt(0) === 0 ? "\0" + key.v : key.v;
  }
  return "\0" + typedKey(key, 0);
}

/** Typed key: llama.cpp hashes by type and value, with integral floats and bools equal to ints. */
function typedKey(key: JValue, depth: number): string {
  checkDepth(depth);
  switch (key.kind) {
    case "string":
      spendRead(key.v.length);
      return "s" + key.v;
    case "int":
      return "n" + String(key.v);
    case "float":
      return Number.isInteger(key.v) ? "n" + String(key.v) : "f" + String(key.v);
    case "bool":
      return "n" + (key.v ? "1" : "0");
    case "none":
      return "N";
    case "array":
      if (!key.tuple) throw new TemplateRuntimeError(`Object key of unhashable type: ${typeName(key)}`);
      spend(key.items.length);
      return "t[" + key.items.map((x) => typedKey(x, depth + 1)).join(",") + "]";
    case "undefined":
    case "object":
    case "func":
    case "kwarg":
      throw new TemplateRuntimeError(`Type: ${typeName(key)} is not allowed as object key`);
  }
}

export function objGet(o: ValueOf<"object">, key: JValue): JValue | undefined {
  return o.entries.get(hashKey(key))?.[1];
}

/**
 * Changes made to values that existed before (a member set, append, pop), counted: a render
 * that made none left every value it was given as it was (reuse.ts reads this).
 */
let changes = 0;
export const changeCount = (): number => changes;
export function noteChange(): void {
  changes++;
}

export function objSet(o: ValueOf<"object">, key: JValue, value: JValue): void {
  const h = hashKey(key);
  const prev = o.entries.get(h);
  if (prev === undefined) checkItems(o.entries.size + 1);
  // replacing keeps the original position (and the original key), as value_object_t::insert does
  o.entries.set(h, [prev ? prev[0] : key, value]);
}

export function objHas(o: ValueOf<"object">, key: JValue): boolean {
  return o.entries.has(hashKey(key));
}

// ---- conversions -------------------------------------------------------------------------------

/** A number that was written as a float in JSON text (json-text.ts). */
export class JsonFloat {
  constructor(readonly value: number) {}
}

/** Values of these keys stay unmarked when they are plain words, so `'<|' + role + '|>'` still builds a marker. */
export const STRUCTURAL_KEYS: ReadonlySet<string> = new Set(["role", "type"]);
export const PLAIN_WORD = /^[A-Za-z0-9_.-]*$/;

/**
 * JSON-compatible JS data -> values (global_from_json); `Map`s are ordered objects. With
 * `markInput`, every string (object keys included) is marked as input except the plain-word
 * values of `role` and `type` fields.
 */
export function fromJS(x: unknown, markInput = false, key?: string, depth = 0): JValue {
  checkDepth(depth);
  if (x === null) return none();
  if (x === undefined) return undef();
  if (x instanceof JsonFloat) return float(x.value);
  const mk = (s: string): JValue => (markInput ? str(s, allMarked(s.length)) : str(s));
  if (x instanceof Map) return obj([...x].map(([k, v]) => [mk(String(k)), fromJS(v, markInput, String(k), depth + 1)]));
  switch (typeof x) {
    case "boolean":
      return bool(x);
    case "number":
      return Number.isInteger(x) && !Object.is(x, -0) ? int(x) : float(x);
    case "bigint":
      return int(Number(x));
    case "string":
      return markInput && !(key !== undefined && STRUCTURAL_KEYS.has(key) && PLAIN_WORD.test(x)) ? mk(x) : str(x);
    case "object":
      if (Array.isArray(x)) return arr(x.map((v) => fromJS(v, markInput, undefined, depth + 1)));
      if (x instanceof Date) return str(x.toISOString());
      return obj(Object.entries(x as Record<string, unknown>).map(([k, v]) => [mk(k), fromJS(v, markInput, k, depth + 1)]));
    default:
      throw new TemplateRuntimeError(`cannot pass a ${typeof x} to a template`);
  }
}

// ---- type names, truthiness, strings -----------------------------------------------------------

export function typeName(v: JValue): string {
  switch (v.kind) {
    case "undefined":
      return v.hint ? `Undefined (hint: '${v.hint}')` : "Undefined";
    case "none":
      return "None";
    case "bool":
      return "Boolean";
    case "int":
      return "Integer";
    case "float":
      return "Float";
    case "string":
      return "String";
    case "array":
      return v.tuple ? "Tuple" : "Array";
    case "object":
      return "Object";
    case "func":
      return "Function";
    case "kwarg":
      return "KwArg";
  }
}

export function truthy(v: JValue): boolean {
  switch (v.kind) {
    case "undefined":
    case "none":
      return false;
    case "bool":
      return v.v;
    case "int":
    case "float":
      return v.v !== 0;
    case "string":
      return v.v.length > 0;
    case "array":
      return v.items.length > 0;
    case "object":
      return v.entries.size > 0;
    case "func":
    case "kwarg":
      throw new TemplateRuntimeError(`${typeName(v)} is not a bool value`);
  }
}

/**
 * How floats and strings inside containers print. "python" (the default): as Python's Jinja, which
 * the models were trained on: `repr` (shortest round-trip, `1e-09`, `2.0`) for `{{ x }}` and
 * `| string`, `json.dumps` for `tojson`, strings in a list or dict as `repr(str)` (escapes).
 * "reference": as llama.cpp's engine (`%f` trimmed, `%g` in JSON: 6 significant digits; strings
 * quoted but not escaped).
 * Set per render (render.ts); renders are synchronous, so one module-level setting is enough.
 */
export type PrintStyle = "python" | "reference";
let printStyle: PrintStyle = "python";

/** Runs `f` with floats printed in `style`, restoring the previous style afterwards. */
export function withPrintStyle<T>(style: PrintStyle, f: () => T): T {
  const prev = printStyle;
  printStyle = style;
  try {
    return f();
  } finally {
    printStyle = prev;
  }
}

/** The style renders print floats in now. */
export const currentPrintStyle = (): PrintStyle => printStyle;

/**
 * Python's `repr(float)`: the shortest digits that round-trip, fixed notation for decimal
 * exponents -4..15 (always with a fractional part), else `d.ddde±XX`.
 */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant, ex] = x.toExponential().split("e") as [string, string];
  const e = Number(ex);
  const neg = mant.startsWith("-");
  const digits = mant.replace(/^-/, "").replace(".", "");
  const sign = neg ? "-" : "";
  if (e < -4 || e >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const int = digits.slice(0, e + 1).padEnd(e + 1, "0");
  const frac = digits.slice(e + 1);
  return `${sign}${int}.${frac === "" ? "0" : frac}`;
}

/** Python's `json.dumps` of a float (`repr`, with NaN / Infinity spelled as JavaScript does). */
function pythonFloatJson(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x < 0 ? "-Infinity" : "Infinity";
  return pythonFloatRepr(x);
}

/**
 * A float as `{{ x }}` prints it: Python's repr, or in the reference style C++
 * `std::to_string(double)` ("%f") with trailing zeros removed but one decimal kept.
 */
export function floatToString(x: number): string {
  if (printStyle === "python") return pythonFloatRepr(x);
  if (Number.isNaN(x)) return x < 0 ? "-nan" : "nan";
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  let out = x.toFixed(6);
  out = out.replace(/0+$/, "");
  if (out.endsWith(".")) out += "0";
  return out;
}

/** A float in JSON (tojson): `json.dumps`, or in the reference style C++ `ostream << double` (default precision 6, i.e. printf "%g"). */
export function floatToJson(x: number): string {
  if (printStyle === "python") return pythonFloatJson(x);
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mant, ex] = x.toExponential(5).split("e") as [string, string];
  const e = Number(ex);
  const strip = (s: string): string => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  if (e < -4 || e >= 6) {
    const digits = String(Math.abs(e)).padStart(2, "0");
    return `${strip(mant)}e${e < 0 ? "-" : "+"}${digits}`;
  }
  return strip(x.toFixed(5 - e));
}

/** `value_t::as_string()`; throws where the reference has no string form. */
export function asString(v: JValue): string {
  if (v.kind === "string") return v.v;
  const b = new MarkedBuilder();
  stringInto(b, v, 0);
  return b.text;
}

/** `as_string()` with the input marks of the strings it contains. */
export function asMarked(v: JValue): { v: string; m?: Marks } {
  if (v.kind === "string") return v.m !== undefined ? { v: v.v, m: v.m } : { v: v.v };
  const b = new MarkedBuilder();
  stringInto(b, v, 0);
  if (v.kind === "array" || v.kind === "object") spendString(b.length);
  return b.result();
}

function stringInto(b: MarkedBuilder, v: JValue, depth: number): void {
  checkDepth(depth);
  spend(4);
  switch (v.kind) {
    case "string":
      b.append(v.v, v.m);
      return;
    case "int":
      b.append(String(v.v));
      return;
    case "float":
      b.append(floatToString(v.v));
      return;
    case "bool":
      b.append(v.v ? "True" : "False");
      return;
    case "none":
      b.append("None");
      return;
    case "array": {
      b.append(v.tuple ? "(" : "[");
      v.items.forEach((x, i) => {
        if (i > 0) b.append(", ");
        reprInto(b, x, depth + 1);
      });
      if (v.tuple && v.items.length === 1) b.append(",");
      b.append(v.tuple ? ")" : "]");
      break;
    }
    case "object": {
      b.append("{");
      let i = 0;
      for (const [k, x] of v.entries.values()) {
        if (i++ > 0) b.append(", ");
        reprInto(b, k, depth + 1);
        b.append(": ");
        reprInto(b, x, depth + 1);
      }
      b.append("}");
      break;
    }
    case "undefined":
    case "func":
    case "kwarg":
      throw new TemplateRuntimeError(`${typeName(v)} is not a string value`);
  }
  checkLength(b.length);
}

/** Python-ish repr used inside containers (value_to_string_repr). */
export function repr(v: JValue): string {
  const b = new MarkedBuilder();
  reprInto(b, v, 0);
  return b.text;
}

/** Python's `repr(str)`: single quotes unless only `'` occurs, backslash escapes for `\\`, the quote, and control characters. */
export function pythonStrRepr(s: string): string {
  const b = new MarkedBuilder();
  pythonStrReprInto(b, s, undefined);
  return b.text;
}

/** {@link pythonStrRepr} into `b`; each character's escape keeps the character's input mark. */
function pythonStrReprInto(b: MarkedBuilder, s: string, m: Marks | undefined): void {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  b.append(quote);
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const c = ch.charCodeAt(0);
    let out = ch;
    if (ch === "\\" || ch === quote) out = `\\${ch}`;
    else if (ch === "\n") out = "\\n";
    else if (ch === "\r") out = "\\r";
    else if (ch === "\t") out = "\\t";
    else if (c < 0x20 || c === 0x7f) out = `\\x${c.toString(16).padStart(2, "0")}`;
    b.append(out, isMarkedAt(m, i) ? allMarked(out.length) : undefined);
  }
  b.append(quote);
}

const NEEDS_PY_ESCAPE = /[\\\x00-\x1f\x7f]/;

function reprInto(b: MarkedBuilder, v: JValue, depth: number): void {
  if (v.kind === "string" && printStyle === "python" && (NEEDS_PY_ESCAPE.test(v.v) || (v.v.includes("'") && v.v.includes('"')))) {
    // Python's repr (what Python's Jinja prints for a string inside a list or dict)
    pythonStrReprInto(b, v.v, v.m);
  } else if (v.kind === "string" && printStyle === "python" && v.v.includes("'")) {
    b.append('"');
    b.append(v.v, v.m);
    b.append('"');
  } else if (v.kind === "string") {
    if (v.v.includes("'")) jsonStringInto(b, v.v, v.m);
    else {
      b.append("'");
      b.append(v.v, v.m);
      b.append("'");
    }
  } else if (v.kind === "undefined") b.append(typeName(v));
  else if (v.kind === "func") {
    b.append(`Function<${v.name}>(`);
    if (v.self) reprInto(b, v.self, depth + 1);
    b.append(")");
  } else if (v.kind === "kwarg") b.append("KwArg");
  else stringInto(b, v, depth);
}

/**
 * What `{{ v }}` prints. Python style: lists and dicts as their repr (Python's Jinja calls `str()`:
 * MiniCPM5 prints a dict argument that way); reference style (gather_string_parts): arrays flatten,
 * objects print nothing. None and undefined print nothing in both.
 */
export function printValue(v: JValue): string {
  if (v.kind === "string") return v.v;
  const b = new MarkedBuilder();
  printInto(b, v);
  return b.text;
}

/** Appends what `{{ v }}` prints, with its input marks. */
export function printInto(b: MarkedBuilder, v: JValue, depth = 0): void {
  switch (v.kind) {
    case "string":
      b.append(v.v, v.m);
      return;
    case "int":
    case "float":
    case "bool":
      b.append(asString(v));
      return;
    case "array":
      if (printStyle === "python") {
        stringInto(b, v, depth);
        return;
      }
      checkDepth(depth);
      spend(v.items.length);
      for (const x of v.items) printInto(b, x, depth + 1);
      return;
    case "object":
      if (printStyle === "python") stringInto(b, v, depth);
      return;
    default:
      return;
  }
}

// ---- JSON --------------------------------------------------------------------------------------

/** Characters JSON strings escape. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

function jsonEscape(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  let out = "";
  for (const ch of s) {
    switch (ch) {
      case '"':
        out += '\\"';
        break;
      case "\\":
        out += "\\\\";
        break;
      case "\b":
        out += "\\b";
        break;
      case "\f":
        out += "\\f";
        break;
      case "\n":
        out += "\\n";
        break;
      case "\r":
        out += "\\r";
        break;
      case "\t":
        out += "\\t";
        break;
      default: {
        const c = ch.codePointAt(0)!;
        out += c < 0x20 ? "\\u" + c.toString(16).padStart(4, "0") : ch;
      }
    }
  }
  return out;
}

/** A JSON string literal; the escaped text of marked characters stays marked, the quotes do not. */
function jsonStringInto(b: MarkedBuilder, s: string, m: Marks | undefined): void {
  spendString(s.length);
  b.append('"');
  if (m === undefined) b.append(jsonEscape(s));
  else for (const r of runs(s, m)) b.appendRun(jsonEscape(r.text), r.marked);
  b.append('"');
}

/**
 * `value_to_json`: indent < 0 means one line; indent >= 0 puts every item on its own line
 * (indent 0 included, as the reference does), with `itemSep`/`keySep` between items and keys.
 */
export function toJson(v: JValue, indent = -1, itemSep = indent < 0 ? ", " : ",", keySep = ": "): string {
  return toJsonMarked(v, indent, itemSep, keySep).v;
}

/** {@link toJson} with the input marks of the strings it contains. */
export function toJsonMarked(v: JValue, indent = -1, itemSep = indent < 0 ? ", " : ",", keySep = ": "): { v: string; m?: Marks } {
  const b = new MarkedBuilder();
  jsonInto(b, v, indent, itemSep, keySep, 0);
  spendString(b.length);
  return b.result();
}

/**
 * JSON already made for containers that have not changed since (the same tools print the same
 * JSON every turn): per value and formatting, with what making it charged, valid while no value
 * anywhere has been changed in place (`changes`). Charged again on reuse (limits.ts chargeAgain).
 */
interface JsonMemo {
  changes: number;
  json: { v: string; m?: Marks };
  steps: number;
  allocation: number;
  limits: ReturnType<typeof budgetPoint>["limits"];
}
const jsonMemo = new WeakMap<object, Map<string, JsonMemo>>();

/** {@link toJsonMarked}, reusing the JSON of an object or array that has not changed since. */
export function toJsonMemo(v: JValue, indent: number, itemSep: string, keySep: string): { v: string; m?: Marks } {
  if (v.kind !== "object" && v.kind !== "array") return toJsonMarked(v, indent, itemSep, keySep);
  const key = `${indent}\u0000${itemSep}\u0000${keySep}\u0000${printStyle}`;
  let memos = jsonMemo.get(v);
  const hit = memos?.get(key);
  if (hit !== undefined && hit.changes === changes && chargeAgain(hit.steps, hit.allocation, hit.limits)) return hit.json;
  const before = budgetPoint();
  const json = toJsonMarked(v, indent, itemSep, keySep);
  const after = budgetPoint();
  if (memos === undefined) jsonMemo.set(v, (memos = new Map()));
  memos.set(key, { changes, json, steps: before.steps - after.steps, allocation: before.allocation - after.allocation, limits: before.limits });
  return json;
}

/** Indentation of JSON level `l`. */
function padding(indent: number, l: number): string {
  if (indent <= 0) return "";
  spendString(l * indent);
  return " ".repeat(l * indent);
}

function jsonInto(b: MarkedBuilder, v: JValue, indent: number, itemSep: string, keySep: string, level: number): void {
  checkDepth(level);
  // a JSON node costs several times a plain node (formatting, separators, escapes)
  spend(8);
  const nl = indent >= 0 ? "\n" : "";
  switch (v.kind) {
    case "none":
    case "undefined":
    case "func":
    case "kwarg":
      b.append("null");
      return;
    case "bool":
      b.append(v.v ? "true" : "false");
      return;
    case "int":
      b.append(String(v.v));
      return;
    case "float":
      b.append(floatToJson(v.v));
      return;
    case "string":
      jsonStringInto(b, v.v, v.m);
      return;
    case "array": {
      if (v.items.length === 0) {
        b.append("[]");
        return;
      }
      b.append("[" + nl);
      v.items.forEach((x, i) => {
        if (i > 0) b.append(itemSep + nl);
        b.append(padding(indent, level + 1));
        jsonInto(b, x, indent, itemSep, keySep, level + 1);
      });
      b.append(nl + padding(indent, level) + "]");
      break;
    }
    case "object": {
      if (v.entries.size === 0) {
        b.append("{}");
        return;
      }
      b.append("{" + nl);
      let i = 0;
      for (const [k, x] of v.entries.values()) {
        if (i++ > 0) b.append(itemSep + nl);
        b.append(padding(indent, level + 1));
        if (k.kind === "string") jsonStringInto(b, k.v, k.m);
        else {
          const key = asMarked(k);
          jsonStringInto(b, key.v, key.m);
        }
        b.append(keySep);
        jsonInto(b, x, indent, itemSep, keySep, level + 1);
      }
      b.append(nl + padding(indent, level) + "}");
      break;
    }
  }
  checkLength(b.length);
}

/** Escapes non-ASCII characters inside JSON strings as \uXXXX (surrogate pairs above U+FFFF). */
export function jsonEnsureAscii(json: string, m?: Marks): { v: string; m?: Marks } {
  const escape = (s: string): string => {
    let out = "";
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      out += c < 0x80 ? s[i] : "\\u" + c.toString(16).padStart(4, "0");
    }
    return out;
  };
  spendString(json.length * 6);
  if (m === undefined) return { v: escape(json) };
  const b = new MarkedBuilder();
  for (const r of runs(json, m)) b.appendRun(escape(r.text), r.marked);
  return b.result();
}

// ---- equality and ordering ---------------------------------------------------------------------

/** A number, bool as 0/1, for `==`. */
const num = (x: JValue): number | undefined => (x.kind === "int" || x.kind === "float" ? x.v : x.kind === "bool" ? (x.v ? 1 : 0) : undefined);

/** `==` (value_t::equivalent). */
export function equals(a: JValue, b: JValue, depth = 0): boolean {
  checkDepth(depth);
  spend(1);
  switch (a.kind) {
    case "int":
    case "float":
    case "bool": {
      const x = num(a);
      const y = num(b);
      return y !== undefined && x === y;
    }
    case "string":
      if (b.kind !== "string") return false;
      spendRead(Math.min(a.v.length, b.v.length));
      return a.v === b.v;
    case "none":
      return b.kind === "none";
    case "undefined":
      return b.kind === "undefined";
    case "array":
      return (
        b.kind === "array" &&
        a.tuple === b.tuple &&
        isHashable(a) &&
        isHashable(b) &&
        a.items.length === b.items.length &&
        a.items.every((x, i) => equals(x, b.items[i]!, depth + 1))
      );
    case "object": {
      if (b.kind !== "object" || !isHashable(a) || !isHashable(b) || a.entries.size !== b.entries.size) return false;
      const ea = [...a.entries.values()];
      const eb = [...b.entries.values()];
      return ea.every(([k, x], i) => equals(k, eb[i]![0], depth + 1) && equals(x, eb[i]![1], depth + 1));
    }
    case "func":
      return b.kind === "func" && a.fn === b.fn;
    case "kwarg":
      return b.kind === "kwarg" && a.key === b.key && a.value === b.value;
  }
}

function isImmutable(v: JValue): boolean {
  return !((v.kind === "array" && !v.tuple) || v.kind === "object");
}

function isHashable(v: JValue, depth = 0): boolean {
  checkDepth(depth);
  spend(1);
  switch (v.kind) {
    case "array":
      return v.items.every((x) => isImmutable(x) && isHashable(x, depth + 1));
    case "object":
      return [...v.entries.values()].every(([, x]) => isImmutable(x) && isHashable(x, depth + 1));
    case "undefined":
    case "func":
      return false;
    default:
      return true;
  }
}

export type CompareOp = "eq" | "ne" | "lt" | "gt" | "ge";

/** `value_compare`: numbers numerically, strings (or string vs number) as strings, bools eq/ne. */
export function compare(a: JValue, b: JValue, op: CompareOp): boolean {
  const apply = <T>(x: T, y: T): boolean => {
    switch (op) {
      case "eq":
        return x === y;
      case "ne":
        return x !== y;
      case "lt":
        return x < y;
      case "gt":
        return x > y;
      case "ge":
        return x >= y;
    }
  };
  if (isNumeric(a) && isNumeric(b)) return apply(a.v, b.v);
  if (
    (b.kind === "string" && isNumeric(a)) ||
    (a.kind === "string" && isNumeric(b)) ||
    (a.kind === "string" && b.kind === "string")
  ) {
    return byteCompare(asString(a), asString(b), op);
  }
  if (a.kind === "bool" && b.kind === "bool") {
    if (op === "eq") return a.v === b.v;
    if (op === "ne") return a.v !== b.v;
    throw new TemplateRuntimeError("Unsupported comparison operator for bool type");
  }
  return false;
}

/** std::string comparison is bytewise (UTF-8); JS compares UTF-16 units, which differs past the BMP. */
function byteCompare(x: string, y: string, op: CompareOp): boolean {
  spendRead(x.length + y.length);
  const c = Buffer.compare(Buffer.from(x, "utf8"), Buffer.from(y, "utf8"));
  switch (op) {
    case "eq":
      return c === 0;
    case "ne":
      return c !== 0;
    case "lt":
      return c < 0;
    case "gt":
      return c > 0;
    case "ge":
      return c >= 0;
  }
}

// ---- usage stats -------------------------------------------------------------------------------

export function markUsed(v: JValue, deep = false, op?: string, depth = 0): void {
  const s = (v.stats ??= { used: false, ops: new Set() });
  s.used = true;
  if (op !== undefined) s.ops.add(op);
  if (!deep) return;
  checkDepth(depth);
  spend(1);
  if (v.kind === "array") for (const x of v.items) markUsed(x, true, undefined, depth + 1);
  else if (v.kind === "object")
    for (const [k, x] of v.entries.values()) {
      markUsed(k, true, undefined, depth + 1);
      markUsed(x, true, undefined, depth + 1);
    }
}
