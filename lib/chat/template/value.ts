/**
 * The value model the template evaluator works on. It follows llama.cpp's Jinja runtime
 * (`common/jinja/value.h`), not @huggingface/jinja's, because prompts must come out byte-identical
 * to the reference: integers and floats are distinct, objects keep insertion order and accept any
 * hashable key (integers too), `None` and `Undefined` are distinct, tuples are immutable arrays.
 *
 * Every value carries optional usage stats; the capability probe (caps.ts) reads them to learn
 * which parts of its input a template touched, as the reference's `caps_get` does.
 */

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
  | (Base & { kind: "string"; v: string })
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
export const str = (v: string): JValue => ({ kind: "string", v });
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

/** Hash key: llama.cpp hashes by type and value, with integral floats and bools equal to ints. */
export function hashKey(key: JValue): string {
  switch (key.kind) {
    case "string":
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
      return "t[" + key.items.map(hashKey).join(",") + "]";
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

export function objSet(o: ValueOf<"object">, key: JValue, value: JValue): void {
  const h = hashKey(key);
  const prev = o.entries.get(h);
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

/** JSON-compatible JS data -> values (global_from_json); `Map`s are ordered objects. */
export function fromJS(x: unknown): JValue {
  if (x === null) return none();
  if (x === undefined) return undef();
  if (x instanceof JsonFloat) return float(x.value);
  if (x instanceof Map) return obj([...x].map(([k, v]) => [str(String(k)), fromJS(v)]));
  switch (typeof x) {
    case "boolean":
      return bool(x);
    case "number":
      return Number.isInteger(x) && !Object.is(x, -0) ? int(x) : float(x);
    case "bigint":
      return int(Number(x));
    case "string":
      return str(x);
    case "object":
      if (Array.isArray(x)) return arr(x.map(fromJS));
      if (x instanceof Date) return str(x.toISOString());
      return obj(Object.entries(x as Record<string, unknown>).map(([k, v]) => [str(k), fromJS(v)]));
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

/** C++ `std::to_string(double)` ("%f") with trailing zeros removed but one decimal kept. */
export function floatToString(x: number): string {
  if (Number.isNaN(x)) return x < 0 ? "-nan" : "nan";
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  let out = x.toFixed(6);
  out = out.replace(/0+$/, "");
  if (out.endsWith(".")) out += "0";
  return out;
}

/** C++ `ostream << double` (default precision 6, i.e. printf "%g"), used by tojson. */
export function floatToJson(x: number): string {
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
  switch (v.kind) {
    case "string":
      return v.v;
    case "int":
      return String(v.v);
    case "float":
      return floatToString(v.v);
    case "bool":
      return v.v ? "True" : "False";
    case "none":
      return "None";
    case "array": {
      const inner = v.items.map(repr).join(", ");
      return v.tuple ? `(${inner}${v.items.length === 1 ? "," : ""})` : `[${inner}]`;
    }
    case "object":
      return "{" + [...v.entries.values()].map(([k, x]) => `${repr(k)}: ${repr(x)}`).join(", ") + "}";
    case "undefined":
    case "func":
    case "kwarg":
      throw new TemplateRuntimeError(`${typeName(v)} is not a string value`);
  }
}

/** Python-ish repr used inside containers (value_to_string_repr). */
export function repr(v: JValue): string {
  if (v.kind === "string") return v.v.includes("'") ? toJson(v) : `'${v.v}'`;
  if (v.kind === "undefined") return typeName(v);
  if (v.kind === "func") return `Function<${v.name}>(${v.self ? repr(v.self) : ""})`;
  if (v.kind === "kwarg") return "KwArg";
  return asString(v);
}

/** What `{{ v }}` prints (gather_string_parts): arrays flatten, objects/None/undefined print nothing. */
export function printValue(v: JValue): string {
  switch (v.kind) {
    case "string":
      return v.v;
    case "int":
    case "float":
    case "bool":
      return asString(v);
    case "array":
      return v.items.map(printValue).join("");
    default:
      return "";
  }
}

// ---- JSON --------------------------------------------------------------------------------------

function jsonString(s: string): string {
  let out = '"';
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
  return out + '"';
}

/**
 * `value_to_json`: indent < 0 means one line; indent >= 0 puts every item on its own line
 * (indent 0 included, as the reference does), with `itemSep`/`keySep` between items and keys.
 */
export function toJson(v: JValue, indent = -1, itemSep = indent < 0 ? ", " : ",", keySep = ": ", level = 0): string {
  const nl = indent >= 0 ? "\n" : "";
  const pad = (l: number): string => (indent > 0 ? " ".repeat(l * indent) : "");
  switch (v.kind) {
    case "none":
    case "undefined":
      return "null";
    case "bool":
      return v.v ? "true" : "false";
    case "int":
      return String(v.v);
    case "float":
      return floatToJson(v.v);
    case "string":
      return jsonString(v.v);
    case "array": {
      if (v.items.length === 0) return "[]";
      const parts = v.items.map((x) => pad(level + 1) + toJson(x, indent, itemSep, keySep, level + 1));
      return "[" + nl + parts.join(itemSep + nl) + nl + pad(level) + "]";
    }
    case "object": {
      if (v.entries.size === 0) return "{}";
      const parts = [...v.entries.values()].map(
        ([k, x]) => pad(level + 1) + jsonString(asString(k)) + keySep + toJson(x, indent, itemSep, keySep, level + 1),
      );
      return "{" + nl + parts.join(itemSep + nl) + nl + pad(level) + "}";
    }
    case "func":
    case "kwarg":
      return "null";
  }
}

/** Escapes non-ASCII characters inside JSON strings as \uXXXX (surrogate pairs above U+FFFF). */
export function jsonEnsureAscii(json: string): string {
  let out = "";
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    out += c < 0x80 ? json[i] : "\\u" + c.toString(16).padStart(4, "0");
  }
  return out;
}

// ---- equality and ordering ---------------------------------------------------------------------

/** `==` (value_t::equivalent). */
export function equals(a: JValue, b: JValue): boolean {
  const num = (x: JValue): number | undefined =>
    x.kind === "int" || x.kind === "float" ? x.v : x.kind === "bool" ? (x.v ? 1 : 0) : undefined;
  switch (a.kind) {
    case "int":
    case "float":
    case "bool": {
      const x = num(a);
      const y = num(b);
      return y !== undefined && x === y;
    }
    case "string":
      return b.kind === "string" && a.v === b.v;
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
        a.items.every((x, i) => equals(x, b.items[i]!))
      );
    case "object": {
      if (b.kind !== "object" || !isHashable(a) || !isHashable(b) || a.entries.size !== b.entries.size) return false;
      const ea = [...a.entries.values()];
      const eb = [...b.entries.values()];
      return ea.every(([k, x], i) => equals(k, eb[i]![0]) && equals(x, eb[i]![1]));
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

function isHashable(v: JValue): boolean {
  switch (v.kind) {
    case "array":
      return v.items.every((x) => isImmutable(x) && isHashable(x));
    case "object":
      return [...v.entries.values()].every(([, x]) => isImmutable(x) && isHashable(x));
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

export function markUsed(v: JValue, deep = false, op?: string): void {
  const s = (v.stats ??= { used: false, ops: new Set() });
  s.used = true;
  if (op !== undefined) s.ops.add(op);
  if (!deep) return;
  if (v.kind === "array") for (const x of v.items) markUsed(x, true);
  else if (v.kind === "object")
    for (const [k, x] of v.entries.values()) {
      markUsed(k, true);
      markUsed(x, true);
    }
}
