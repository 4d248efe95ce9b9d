/**
 * Filters, methods, tests and global functions, with llama.cpp's semantics
 * (`common/jinja/value.cpp`): a filter `x | f(a)` and a method `x.f(a)` are the same builtin of
 * x's type, called with x first. Where the reference leaves a builtin unimplemented (it throws), we
 * throw too, so that a template fails in the same places.
 */
import {
  type FuncArgs,
  type JValue,
  type ValueOf,
  TemplateRaisedError,
  TemplateRuntimeError,
  arr,
  asMarked,
  asString,
  bool,
  compare,
  equals,
  float,
  int,
  is,
  isNumeric,
  jsonEnsureAscii,
  markUsed,
  marksOf,
  none,
  obj,
  objGet,
  objHas,
  noteChange,
  objSet,
  str,
  toJsonMarked,
  toJsonMemo,
  truthy,
  typeName,
  undef,
} from "./value.js";
import { strftime } from "./strftime.js";
import { checkItems, spend, spendItems, spendRead, spendString } from "./limits.js";
import { type Marks, MarkedBuilder, sliceMarks } from "./marks.js";

export type Builtin = (a: FuncArgs) => JValue;
type Table = ReadonlyMap<string, Builtin>;

// ---- argument access (func_args) ---------------------------------------------------------------

function count(a: FuncArgs): number {
  return a.args.length;
}

function ensureCount(a: FuncArgs, min: number, max = 999): void {
  const n = a.args.length;
  if (n < min || n > max)
    throw new TemplateRuntimeError(`Function '${a.name}' expected between ${min} and ${max} arguments, got ${n}`);
}

function pos(a: FuncArgs, i: number, dflt?: JValue): JValue {
  const v = a.args[i];
  if (v !== undefined) return v;
  if (dflt !== undefined) return dflt;
  throw new TemplateRaisedError(`Function '${a.name}' expected at least ${i + 1} arguments, got ${a.args.length}`);
}

function kwarg(a: FuncArgs, key: string, dflt: JValue): JValue {
  for (const v of a.args) if (v.kind === "kwarg" && v.key === key) return v.value;
  return dflt;
}

function kwargOrPos(a: FuncArgs, key: string, i: number): JValue {
  const v = kwarg(a, key, undef());
  const p = a.args[i];
  if (v.kind === "undefined" && p !== undefined && p.kind !== "kwarg") return p;
  return v;
}

type KindSpec = JValue["kind"] | "array|tuple";

/** ensure_vals: the first `required` arguments must exist; present ones must have these kinds. */
function ensureVals(a: FuncArgs, kinds: KindSpec[], required = kinds.length): void {
  ensureCount(a, required);
  kinds.forEach((k, i) => {
    if (i >= required) return;
    const v = a.args[i];
    if (v !== undefined && !(v.kind === k || (k === "array|tuple" && v.kind === "array")))
      throw new TemplateRuntimeError(`Function '${a.name}' expected value of type ${k}, got ${typeName(v)}`);
  });
}

function notImplemented(what: string): Builtin {
  return () => {
    throw new TemplateRuntimeError(`${what} not implemented`);
  };
}

const asInt = (v: JValue): number => (v.kind === "int" || v.kind === "float" ? Math.trunc(v.v) : v.kind === "bool" ? Number(v.v) : 0);

// ---- shared builtins ---------------------------------------------------------------------------

const tojson: Builtin = (a) => {
  ensureCount(a, 1, 5);
  const ascii = kwargOrPos(a, "ensure_ascii", 1);
  const indentV = kwargOrPos(a, "indent", 2);
  const seps = kwargOrPos(a, "separators", 3);
  const sort = kwargOrPos(a, "sort_keys", 4);
  if (a.rt.stats) markUsed(pos(a, 0), true);
  const indent = indentV.kind === "int" ? indentV.v : -1;
  if (truthy(sort)) throw new TemplateRuntimeError("tojson sort_keys=true not implemented");
  const sepItems = seps.kind === "array" ? seps.items : [];
  const itemSep = sepItems[0] ? asString(sepItems[0]) : indent < 0 ? ", " : ",";
  const keySep = sepItems[1] ? asString(sepItems[1]) : ": ";
  // a probe's values collect usage stats: its JSON is made afresh
  const json = a.rt.stats ? toJsonMarked(pos(a, 0), indent, itemSep, keySep) : toJsonMemo(pos(a, 0), indent, itemSep, keySep);
  const out = truthy(ascii) ? jsonEnsureAscii(json.v, json.m) : json;
  return str(out.v, out.m);
};

const defaultValue: Builtin = (a) => {
  ensureCount(a, 2, 3);
  const checkBool = truthy(kwargOrPos(a, "boolean", 2));
  const x = pos(a, 0);
  const missing = checkBool ? !truthy(x) : x.kind === "undefined" || x.kind === "none";
  return missing ? pos(a, 1) : x;
};

const emptyOf =
  (make: () => JValue): Builtin =>
  () =>
    make();

function selectattr(reject: boolean): Builtin {
  return (a) => {
    ensureCount(a, 2, 4);
    ensureVals(a, ["array", "string"], 2);
    const items = (pos(a, 0) as ValueOf<"array">).items;
    spend(items.length);
    const attribute = pos(a, 1);
    const out: JValue[] = [];
    const keep = (selected: boolean): boolean => (reject ? !selected : selected);
    const test = (name: string): Builtin => {
      const fn = GLOBALS.get("test_is_" + name);
      if (!fn) throw new TemplateRaisedError(`selectattr: unknown test '${name}'`);
      return fn;
    };
    if (count(a) === 2) {
      for (const item of items) {
        if (item.kind !== "object") throw new TemplateRaisedError("selectattr: item is not an object");
        if (keep(truthy(objGet(item, attribute) ?? undef()))) out.push(item);
      }
    } else if (count(a) === 3) {
      const fn = test(asString(pos(a, 1)));
      for (const item of items) if (keep(truthy(fn({ name: a.name, args: [item, pos(a, 2)], rt: a.rt })))) out.push(item);
    } else {
      const fn = test(asString(pos(a, 2)));
      for (const item of items) {
        if (item.kind !== "object") throw new TemplateRaisedError("selectattr: item is not an object");
        const v = objGet(item, attribute) ?? undef();
        if (keep(truthy(fn({ name: a.name, args: [v, pos(a, 3)], rt: a.rt })))) out.push(item);
      }
    }
    return arr(out);
  };
}

function stripChars(v: JValue, left: boolean, right: boolean, chars?: string): JValue {
  const s = (v as ValueOf<"string">).v;
  // the reference strips C isspace() bytes: space, \t, \n, \v, \f, \r
  const match = (c: string): boolean => (chars !== undefined ? chars.includes(c) : " \t\n\v\f\r".includes(c));
  let start = 0;
  let end = s.length;
  if (left) while (start < end && match(s[start]!)) start++;
  if (right) while (end > start && match(s[end - 1]!)) end--;
  spendRead(s.length + (s.length - (end - start)) * (chars?.length ?? 1));
  return str(s.slice(start, end), sliceMarks(marksOf(v), start, end));
}

/** A substring of a string value, with its marks. */
function sub(v: { v: string; m?: Marks }, start: number, end: number): JValue {
  return str(v.v.slice(start, end), sliceMarks(v.m, start, end));
}

function sliceSeq<T>(items: readonly T[], start: number, stop: number, step: number): T[] {
  const len = items.length;
  spend(Math.min(len, Math.abs(stop - start) / Math.max(1, Math.abs(step))));
  const out: T[] = [];
  if (step === 0) return out;
  let b: number;
  let e: number;
  if (step > 0) {
    b = start < 0 ? Math.max(len + start, 0) : Math.min(start, len);
    e = stop < 0 ? Math.max(len + stop, 0) : Math.min(stop, len);
  } else {
    b = start < 0 ? Math.max(len + start, 0) : Math.min(start, len - 1);
    e = stop < -1 ? Math.max(len + stop, -1) : Math.min(stop, len - 1);
  }
  const dir = step > 0 ? 1 : -1;
  for (let i = b; dir * i < dir * e; i += step) if (i >= 0 && i < len) out.push(items[i]!);
  return out;
}

function sliceArgs(a: FuncArgs): [number, number, number] {
  const n = count(a) - 1;
  const a0 = asInt(pos(a, 1));
  if (n === 1) return [0, a0, 1];
  if (n === 2) return [a0, asInt(pos(a, 2)), 1];
  const step = asInt(pos(a, 3));
  if (step === 0) throw new TemplateRaisedError("slice step cannot be zero");
  return [a0, asInt(pos(a, 2)), step];
}

function joinValues(a: FuncArgs): JValue {
  ensureCount(a, 1, 3);
  const input = pos(a, 0);
  if (input.kind !== "array") throw new TemplateRaisedError("join() first argument must be an array");
  const d = kwargOrPos(a, "d", 1);
  const attribute = kwargOrPos(a, "attribute", 2);
  const delim = d.kind === "undefined" ? { v: "" } : asMarked(d);
  spend(input.items.length);
  const out = new MarkedBuilder();
  input.items.forEach((item, i) => {
    let v = item;
    if (attribute.kind === "int" && v.kind === "array") v = v.items.at(attribute.v) ?? undef();
    else if (attribute.kind === "string" && v.kind === "object") v = objGet(v, attribute) ?? undef();
    else if (attribute.kind !== "undefined" && attribute.kind !== "int" && attribute.kind !== "string")
      throw new TemplateRaisedError("join() attribute must be string or integer");
    if (v.kind !== "string" && v.kind !== "int" && v.kind !== "float")
      throw new TemplateRaisedError("join() can only join arrays of strings or numerics");
    const part = asMarked(v);
    if (i > 0) {
      spendString(out.length + delim.v.length);
      out.append(delim.v, delim.m);
    }
    spendString(out.length + part.v.length);
    out.append(part.v, part.m);
  });
  const r = out.result();
  return str(r.v, r.m);
}

function pyFormat(a: FuncArgs): JValue {
  const fmt = pos(a, 0);
  if (fmt.kind !== "string") throw new TemplateRaisedError("format() first argument must be a string");
  const out = new MarkedBuilder();
  let argIdx = 1;
  const s = fmt.v;
  spendRead(s.length);
  let lit = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "{") continue;
    if (s[i + 1] !== "}") throw new TemplateRuntimeError("format() only supports simple '{}' placeholders");
    out.append(s.slice(lit, i), sliceMarks(fmt.m, lit, i));
    i++;
    lit = i + 1;
    const arg = asMarked(pos(a, argIdx++));
    spendString(out.length + arg.v.length);
    out.append(arg.v, arg.m);
  }
  out.append(s.slice(lit), sliceMarks(fmt.m, lit, s.length));
  const r = out.result();
  return str(r.v, r.m);
}

function indentFilter(a: FuncArgs): JValue {
  ensureCount(a, 1, 4);
  const input = pos(a, 0);
  const width = kwargOrPos(a, "width", 1);
  const first = truthy(kwargOrPos(a, "first", 2));
  const blank = truthy(kwargOrPos(a, "blank", 3));
  if (input.kind !== "string") throw new TemplateRaisedError("indent() first argument must be a string");
  const padV = width.kind === "int" ? null : width.kind === "string" ? asMarked(width) : { v: "    " };
  const padLength = padV === null ? Math.max(0, (width as ValueOf<"int">).v) : padV.v.length;
  // sized first: one pad per line at most
  let lineCount = 1;
  for (let i = input.v.indexOf("\n"); i >= 0; i = input.v.indexOf("\n", i + 1)) lineCount++;
  spendString(input.v.length + lineCount * padLength);
  const pad = padV ?? { v: " ".repeat(padLength) };
  const out = new MarkedBuilder();
  // std::getline splitting: a trailing newline does not start an extra line
  const ends = input.v.endsWith("\n");
  let start = 0;
  for (let i = 0; ; i++) {
    const nl = input.v.indexOf("\n", start);
    const stop = nl < 0 ? input.v.length : nl;
    if (nl < 0 && ends) break;
    if (i > 0) out.append("\n");
    if (i === 0 ? first : stop > start || blank) out.append(pad.v, pad.m);
    out.append(input.v.slice(start, stop), sliceMarks(input.m, start, stop));
    if (nl < 0 || (ends && nl === input.v.length - 1)) break;
    start = nl + 1;
  }
  if (ends) {
    out.append("\n");
    if (blank) out.append(pad.v, pad.m);
  }
  const r = out.result();
  return str(r.v, r.m);
}

function splitFilter(fromRight: boolean): Builtin {
  return (a) => {
    ensureCount(a, 1, 3);
    const input = pos(a, 0);
    if (input.kind !== "string") throw new TemplateRaisedError(`${fromRight ? "rsplit" : "split"}() first argument must be a string`);
    const delim = count(a) > 1 ? asString(pos(a, 1)) : " ";
    if (delim === "") throw new TemplateRaisedError("empty separator");
    let maxsplit = count(a) > 2 ? asInt(pos(a, 2)) : -1;
    const s = input.v;
    spendRead(s.length);
    const out: JValue[] = [];
    // pieces are cut by index (not by re-slicing the rest), so many delimiters stay linear
    if (!fromRight) {
      let start = 0;
      let p: number;
      while ((p = s.indexOf(delim, start)) !== -1 && maxsplit !== 0) {
        spendItems(out.length + 1);
        out.push(sub(input, start, p));
        start = p + delim.length;
        maxsplit--;
      }
      out.push(sub(input, start, s.length));
      return arr(out);
    }
    let end = s.length;
    let p: number;
    while (end >= delim.length && (p = s.lastIndexOf(delim, end - delim.length)) !== -1 && maxsplit !== 0) {
      spendItems(out.length + 1);
      out.push(sub(input, p + delim.length, end));
      end = p;
      maxsplit--;
    }
    out.push(sub(input, 0, end));
    return arr(out.reverse());
  };
}

function replaceFilter(a: FuncArgs): JValue {
  ensureVals(a, ["string", "string", "string"]);
  const input = asMarked(pos(a, 0));
  const s = input.v;
  const from = asString(pos(a, 1));
  const to = asMarked(pos(a, 2));
  if (count(a) > 3 && asInt(pos(a, 3)) > 0) throw new TemplateRuntimeError("String replace with count argument not implemented");
  if (from === to.v) return str(s, input.m);
  const out = new MarkedBuilder();
  if (from === "") {
    // sized before it allocates: ('a' * n) | replace('', big) is n + 1 copies of big
    const chars = [...s];
    spendString(s.length + (chars.length + 1) * to.v.length);
    out.append(to.v, to.m);
    let at = 0;
    for (const c of chars) {
      out.append(c, sliceMarks(input.m, at, at + c.length));
      at += c.length;
      out.append(to.v, to.m);
    }
  } else {
    let hits = 0;
    for (let p = s.indexOf(from); p !== -1; p = s.indexOf(from, p + from.length)) hits++;
    spendString(s.length + hits * Math.max(0, to.v.length - from.length));
    let start = 0;
    for (let p = s.indexOf(from); p !== -1; p = s.indexOf(from, start)) {
      out.append(s.slice(start, p), sliceMarks(input.m, start, p));
      out.append(to.v, to.m);
      start = p + from.length;
    }
    out.append(s.slice(start), sliceMarks(input.m, start, s.length));
  }
  const r = out.result();
  return str(r.v, r.m);
}

/** std::stoi semantics: leading whitespace, optional sign, digits of `base`; trailing junk ignored. */
function parseIntLike(s: string, base: number): number | undefined {
  const m = /^[\s]*([+-]?)(0[xX])?([0-9a-zA-Z]+)/.exec(s);
  if (!m) return undefined;
  let b = base;
  let digits = m[3]!;
  if (b === 0) b = m[2] ? 16 : digits.startsWith("0") && digits.length > 1 ? 8 : 10;
  else if (m[2] && b !== 16) digits = "0";
  let val = 0;
  let n = 0;
  for (const c of digits) {
    const d = parseInt(c, 36);
    if (Number.isNaN(d) || d >= b) break;
    val = val * b + d;
    n++;
  }
  if (n === 0) return undefined;
  return m[1] === "-" ? -val : val;
}

function valueSort(a: FuncArgs): JValue {
  ensureCount(a, 1, 4);
  const input = pos(a, 0);
  if (input.kind !== "array") throw new TemplateRaisedError("sort: first argument must be an array");
  const reverse = truthy(kwargOrPos(a, "reverse", 1));
  const attribute = kwargOrPos(a, "attribute", 3);
  const key = (x: JValue, y: JValue): [JValue, JValue] => {
    if (attribute.kind === "undefined") return [x, y];
    if (attribute.kind === "int" && x.kind === "array" && y.kind === "array")
      return [x.items.at(attribute.v) ?? undef(), y.items.at(attribute.v) ?? undef()];
    if (attribute.kind !== "int" && x.kind === "object" && y.kind === "object")
      return [objGet(x, attribute) ?? undef(), objGet(y, attribute) ?? undef()];
    throw new TemplateRaisedError(`sort: unsupported object attribute comparison between ${typeName(x)} and ${typeName(y)}`);
  };
  spendItems(input.items.length);
  const items = [...input.items].sort((x, y) => {
    const [kx, ky] = key(x, y);
    if (compare(kx, ky, reverse ? "gt" : "lt")) return -1;
    if (compare(ky, kx, reverse ? "gt" : "lt")) return 1;
    return 0;
  });
  return arr(items, input.tuple);
}

function minMax(which: "min" | "max"): Builtin {
  return (a) => {
    ensureCount(a, 1, 4);
    ensureVals(a, ["array"]);
    if (kwargOrPos(a, "attribute", 2).kind !== "undefined") throw new TemplateRuntimeError(`${which}: attribute not implemented`);
    const items = (pos(a, 0) as ValueOf<"array">).items;
    spend(items.length);
    if (items.length === 0) return undef();
    let best = items[0]!;
    for (const x of items.slice(1)) if (compare(x, best, which === "min" ? "lt" : "gt")) best = x;
    return best;
  };
}

function mapFilter(a: FuncArgs): JValue {
  ensureCount(a, 2);
  const input = pos(a, 0);
  if (input.kind !== "array") throw new TemplateRaisedError("map: first argument must be an array");
  if (a.args[1]?.kind !== "kwarg") throw new TemplateRuntimeError("map: filter-mapping not implemented");
  const attribute = kwargOrPos(a, "attribute", 1);
  if (attribute.kind !== "string" && attribute.kind !== "int") throw new TemplateRaisedError("map: attribute must be string or integer");
  const dflt = kwarg(a, "default", undef());
  spendItems(input.items.length);
  const out = input.items.map((item) => {
    if (attribute.kind === "int") return item.kind === "array" ? (item.items.at(attribute.v) ?? dflt) : dflt;
    return item.kind === "object" ? (objGet(item, attribute) ?? dflt) : dflt;
  });
  return arr(out, input.tuple);
}

const markDeepString: Builtin = (a) => {
  if (a.rt.stats) markUsed(pos(a, 0), true);
  const r = asMarked(pos(a, 0));
  return str(r.v, r.m);
};

// ---- per-type tables ---------------------------------------------------------------------------

const numericTable = (kind: "int" | "float"): Table =>
  new Map<string, Builtin>([
    ["default", defaultValue],
    [
      "abs",
      (a) => {
        ensureVals(a, [kind]);
        const v = (pos(a, 0) as ValueOf<"int">).v;
        return kind === "int" ? int(Math.abs(v)) : float(Math.abs(v));
      },
    ],
    ["int", (a) => int((pos(a, 0) as ValueOf<"int">).v)],
    ["float", (a) => float((pos(a, 0) as ValueOf<"int">).v)],
    ["safe", tojson],
    ["string", tojson],
    ["tojson", tojson],
  ]);

const INT = numericTable("int");
const FLOAT = numericTable("float");

const boolToString: Builtin = (a) => str(truthy(pos(a, 0)) ? "True" : "False");
const BOOL: Table = new Map<string, Builtin>([
  ["default", defaultValue],
  ["int", (a) => int(truthy(pos(a, 0)) ? 1 : 0)],
  ["float", (a) => float(truthy(pos(a, 0)) ? 1 : 0)],
  ["safe", boolToString],
  ["string", boolToString],
  ["tojson", tojson],
]);

const strVal = (a: FuncArgs): ValueOf<"string"> => {
  const v = pos(a, 0);
  if (v.kind !== "string") throw new TemplateRuntimeError(`Function '${a.name}' expected value of type string, got ${typeName(v)}`);
  return v;
};
const strArg = (a: FuncArgs): string => strVal(a).v;

/** A same-length transformation of a string value: the marks stay where they are. */
const sameLength = (a: FuncArgs, f: (s: string) => string): JValue => {
  const v = strVal(a);
  spendString(v.v.length);
  return str(f(v.v), v.m);
};

const asciiUpper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());
const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

const STRING: Table = new Map<string, Builtin>([
  ["default", defaultValue],
  ["upper", (a) => sameLength(a, asciiUpper)],
  ["lower", (a) => sameLength(a, asciiLower)],
  [
    "strip",
    (a) => {
      const s = pos(a, 0);
      if (s.kind !== "string") throw new TemplateRaisedError("strip() first argument must be a string");
      const chars = kwargOrPos(a, "chars", 1);
      return stripChars(s, true, true, chars.kind === "undefined" ? undefined : asString(chars));
    },
  ],
  [
    "rstrip",
    (a) => {
      const chars = kwargOrPos(a, "chars", 1);
      return stripChars(strVal(a), false, true, chars.kind === "undefined" ? undefined : asString(chars));
    },
  ],
  [
    "lstrip",
    (a) => {
      const chars = kwargOrPos(a, "chars", 1);
      return stripChars(strVal(a), true, false, chars.kind === "undefined" ? undefined : asString(chars));
    },
  ],
  [
    "title",
    (a) =>
      sameLength(a, (s) => {
        let next = true;
        let out = "";
        for (const c of s) {
          if (" \t\n\v\f\r".includes(c)) {
            next = true;
            out += c;
          } else if (next) {
            out += asciiUpper(c);
            next = false;
          } else out += asciiLower(c);
        }
        return out;
      }),
  ],
  [
    "capitalize",
    (a) => sameLength(a, (s) => (s === "" ? s : asciiUpper(s[0]!) + asciiLower(s.slice(1)))),
  ],
  // the reference counts bytes (std::string)
  ["length", (a) => (spendRead(strArg(a).length), int(Buffer.byteLength(strArg(a), "utf8")))],
  [
    "startswith",
    (a) => {
      ensureVals(a, ["string", "string"]);
      spendRead(asString(pos(a, 0)).length);
      return bool(asString(pos(a, 0)).startsWith(asString(pos(a, 1))));
    },
  ],
  [
    "endswith",
    (a) => {
      ensureVals(a, ["string", "string"]);
      spendRead(asString(pos(a, 0)).length);
      return bool(asString(pos(a, 0)).endsWith(asString(pos(a, 1))));
    },
  ],
  ["split", splitFilter(false)],
  ["rsplit", splitFilter(true)],
  ["replace", replaceFilter],
  ["format", pyFormat],
  [
    "int",
    (a) => {
      const input = pos(a, 0);
      const dflt = kwargOrPos(a, "default", 1);
      const baseV = kwargOrPos(a, "base", 2);
      const base = baseV.kind === "undefined" ? 10 : asInt(baseV);
      if (base !== 0 && (base < 2 || base > 36)) throw new TemplateRaisedError("int() base must be 0 or between 2 and 36");
      if (input.kind !== "string") throw new TemplateRaisedError("int() first argument must be a string");
      spendRead(input.v.length);
      const n = parseIntLike(input.v, base);
      return int(n ?? (dflt.kind === "undefined" ? 0 : asInt(dflt)));
    },
  ],
  [
    "float",
    (a) => {
      spendRead(strArg(a).length);
      const n = Number.parseFloat(strArg(a));
      const dflt = kwargOrPos(a, "default", 1);
      return float(Number.isNaN(n) ? (dflt.kind === "undefined" ? 0 : isNumeric(dflt) ? dflt.v : 0) : n);
    },
  ],
  ["string", (a) => str(strArg(a), strVal(a).m)],
  [
    "slice",
    (a) => {
      ensureCount(a, 1, 4);
      const [b, e, s] = sliceArgs(a);
      const v = strVal(a);
      spendRead(v.v.length);
      // slice by code point, each keeping its own mark
      const points: { c: string; at: number }[] = [];
      let at = 0;
      for (const c of v.v) {
        points.push({ c, at });
        at += c.length;
      }
      const out = new MarkedBuilder();
      for (const p of sliceSeq(points, b, e, s)) out.append(p.c, sliceMarks(v.m, p.at, p.at + p.c.length));
      const r = out.result();
      return str(r.v, r.m);
    },
  ],
  ["safe", (a) => pos(a, 0)],
  ["tojson", tojson],
  ["indent", indentFilter],
  ["join", notImplemented("String join builtin")],
]);

const ARRAY: Table = new Map<string, Builtin>([
  ["default", defaultValue],
  ["list", (a) => (spendItems((pos(a, 0) as ValueOf<"array">).items.length), arr([...(pos(a, 0) as ValueOf<"array">).items]))],
  ["first", (a) => (pos(a, 0) as ValueOf<"array">).items[0] ?? undef()],
  ["last", (a) => (pos(a, 0) as ValueOf<"array">).items.at(-1) ?? undef()],
  ["length", (a) => int((pos(a, 0) as ValueOf<"array">).items.length)],
  [
    "slice",
    (a) => {
      ensureCount(a, 1, 4);
      const input = pos(a, 0) as ValueOf<"array">;
      const [b, e, s] = sliceArgs(a);
      return arr(sliceSeq(input.items, b, e, s), input.tuple);
    },
  ],
  ["selectattr", selectattr(false)],
  ["select", selectattr(false)],
  ["rejectattr", selectattr(true)],
  ["reject", selectattr(true)],
  ["join", joinValues],
  ["string", markDeepString],
  ["tojson", tojson],
  ["map", mapFilter],
  [
    "append",
    (a) => {
      ensureCount(a, 2);
      const target = pos(a, 0);
      if (target.kind !== "array") throw new TemplateRaisedError("append: first argument must be an array");
      if (target.tuple) throw new TemplateRuntimeError("Attempting to modify immutable type");
      checkItems(target.items.length + 1);
      noteChange();
      target.items.push(pos(a, 1));
      return target;
    },
  ],
  [
    "pop",
    (a) => {
      ensureCount(a, 1, 2);
      const target = pos(a, 0) as ValueOf<"array">;
      if (target.tuple) throw new TemplateRuntimeError("Attempting to modify immutable type");
      let i = count(a) === 2 ? asInt(pos(a, 1)) : -1;
      if (i < 0) i += target.items.length;
      if (i < 0 || i >= target.items.length)
        throw new TemplateRuntimeError(`Index ${i} out of bounds for array of size ${target.items.length}`);
      spend(target.items.length - i);
      noteChange();
      return target.items.splice(i, 1)[0]!;
    },
  ],
  ["sort", valueSort],
  [
    "reverse",
    (a) => {
      const input = pos(a, 0) as ValueOf<"array">;
      spendItems(input.items.length);
      return arr([...input.items].reverse(), input.tuple);
    },
  ],
  ["min", minMax("min")],
  ["max", minMax("max")],
  ["unique", notImplemented("Array unique builtin")],
]);

const objArg = (a: FuncArgs): ValueOf<"object"> => {
  const v = pos(a, 0);
  if (v.kind !== "object") throw new TemplateRuntimeError(`Function '${a.name}' expected value of type object, got ${typeName(v)}`);
  return v;
};

const OBJECT: Table = new Map<string, Builtin>([
  [
    "get",
    (a) => {
      ensureCount(a, 2, 3);
      const o = pos(a, 0);
      if (o.kind !== "object") throw new TemplateRaisedError("get: first argument must be an object");
      if (pos(a, 1).kind !== "string") throw new TemplateRaisedError("get: second argument must be a string (key)");
      return objGet(o, pos(a, 1)) ?? (count(a) === 3 ? pos(a, 2) : none());
    },
  ],
  ["keys", (a) => (spendItems(objArg(a).entries.size), arr([...objArg(a).entries.values()].map(([k]) => k)))],
  ["values", (a) => (spendItems(objArg(a).entries.size), arr([...objArg(a).entries.values()].map(([, v]) => v)))],
  ["items", (a) => (spendItems(objArg(a).entries.size), arr([...objArg(a).entries.values()].map(([k, v]) => arr([k, v], true))))],
  ["tojson", tojson],
  ["string", markDeepString],
  ["length", (a) => int(objArg(a).entries.size)],
  [
    "dictsort",
    (a) => {
      const input = objArg(a);
      const by = kwargOrPos(a, "by", 2);
      const reverse = truthy(kwargOrPos(a, "reverse", 3));
      const byValue = by.kind === "string" && by.v === "value";
      spendItems(input.entries.size);
      const pairs = [...input.entries.values()].sort((x, y) => {
        const [kx, ky] = byValue ? [x[1], y[1]] : [x[0], y[0]];
        if (compare(kx, ky, reverse ? "gt" : "lt")) return -1;
        if (compare(ky, kx, reverse ? "gt" : "lt")) return 1;
        return 0;
      });
      return obj(pairs);
    },
  ],
  ["join", notImplemented("object join")],
]);

const noneToString: Builtin = () => str("None");
const emptyArray = emptyOf(() => arr([]));
const NONE: Table = new Map<string, Builtin>([
  ["default", defaultValue],
  ["tojson", tojson],
  ["string", noneToString],
  ["safe", noneToString],
  ["items", emptyArray],
  ["map", emptyArray],
  ["reject", emptyArray],
  ["rejectattr", emptyArray],
  ["select", emptyArray],
  ["selectattr", emptyArray],
  ["unique", emptyArray],
]);

const emptyString = emptyOf(() => str(""));
const emptyUndef = emptyOf(() => undef());
const zero = emptyOf(() => int(0));
const UNDEFINED: Table = new Map<string, Builtin>([
  ["default", defaultValue],
  ["capitalize", emptyString],
  ["first", emptyUndef],
  ["items", emptyArray],
  ["join", emptyString],
  ["last", emptyUndef],
  ["length", zero],
  ["list", emptyArray],
  ["lower", emptyString],
  ["map", emptyArray],
  ["max", emptyUndef],
  ["min", emptyUndef],
  ["reject", emptyArray],
  ["rejectattr", emptyArray],
  ["replace", emptyString],
  ["reverse", emptyArray],
  ["safe", emptyString],
  ["select", emptyArray],
  ["selectattr", emptyArray],
  ["sort", emptyArray],
  ["string", emptyString],
  ["strip", emptyString],
  ["sum", zero],
  ["title", emptyString],
  ["truncate", emptyString],
  ["unique", emptyArray],
  ["upper", emptyString],
  ["wordcount", zero],
]);

const EMPTY: Table = new Map();

/** The builtins of a value's type, or undefined where the type has none (functions, kwargs). */
export function builtinsOf(v: JValue): Table | undefined {
  switch (v.kind) {
    case "int":
      return INT;
    case "float":
      return FLOAT;
    case "bool":
      return BOOL;
    case "string":
      return STRING;
    case "array":
      return ARRAY;
    case "object":
      return v.builtins ? OBJECT : EMPTY;
    case "none":
      return NONE;
    case "undefined":
      return UNDEFINED;
    case "func":
    case "kwarg":
      return undefined;
  }
}

// ---- tests and globals -------------------------------------------------------------------------

const typeTest =
  (...kinds: JValue["kind"][]): Builtin =>
  (a) => {
    ensureCount(a, 1);
    return bool(kinds.includes(pos(a, 0).kind));
  };

const compareTest =
  (op: "eq" | "ne" | "lt" | "gt" | "ge"): Builtin =>
  (a) => {
    ensureCount(a, 2, 2);
    return bool(compare(pos(a, 0), pos(a, 1), op));
  };

function isIn(a: FuncArgs): JValue {
  ensureCount(a, 2);
  const needle = pos(a, 0);
  const hay = pos(a, 1);
  switch (hay.kind) {
    case "undefined":
      return bool(false);
    case "array":
      return bool(hay.items.some((x) => equals(needle, x)));
    case "string":
      if (needle.kind !== "string")
        throw new TemplateRaisedError(`'in' test expects args[1] as string when args[0] is string, got args[1] as ${typeName(needle)}`);
      spendRead(hay.v.length);
      return bool(hay.v.includes(needle.v));
    case "object":
      return bool(objHas(hay, needle));
    default:
      throw new TemplateRaisedError(`'in' test expects iterable as first argument, got ${typeName(hay)}`);
  }
}

function range(a: FuncArgs): JValue {
  ensureCount(a, 1, 3);
  ensureVals(a, ["int"], 1);
  for (const v of a.args) if (v.kind !== "int") throw new TemplateRuntimeError(`Function 'range' expected value of type int, got ${typeName(v)}`);
  const n = a.args.map(asInt);
  const [start, stop, step] = n.length === 1 ? [0, n[0]!, 1] : n.length === 2 ? [n[0]!, n[1]!, 1] : [n[0]!, n[1]!, n[2]!];
  if (step === 0) throw new TemplateRaisedError("range() step argument must not be zero");
  // sized before it allocates: range(10**9) is a limit error at once
  spendItems(Math.max(0, Math.ceil((stop - start) / step)));
  const out: JValue[] = [];
  if (step > 0) for (let i = start; i < stop; i += step) out.push(int(i));
  else for (let i = start; i > stop; i += step) out.push(int(i));
  return arr(out);
}

export const GLOBALS: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  [
    "raise_exception",
    (a) => {
      ensureVals(a, ["string"]);
      throw new TemplateRaisedError("Jinja Exception: " + asString(pos(a, 0)));
    },
  ],
  [
    "namespace",
    (a) => {
      const out = obj();
      spend(a.args.length);
      for (const v of a.args) {
        if (v.kind !== "kwarg") throw new TemplateRaisedError("namespace() arguments must be kwargs");
        objSet(out, str(v.key), v.value);
      }
      return out;
    },
  ],
  [
    "strftime_now",
    (a) => {
      ensureVals(a, ["string"]);
      const fmt = asString(pos(a, 0));
      // a directive expands to at most a few dozen characters, at ~0.3 µs each
      spend(16 + fmt.length * 4);
      spendString(fmt.length * 32);
      return str(strftime(a.rt.now, fmt));
    },
  ],
  ["range", range],
  ["tojson", tojson],
  ["test_is_boolean", typeTest("bool")],
  ["test_is_callable", typeTest("func")],
  [
    "test_is_odd",
    (a) => {
      ensureVals(a, ["int"]);
      return bool(asInt(pos(a, 0)) % 2 !== 0);
    },
  ],
  [
    "test_is_even",
    (a) => {
      ensureVals(a, ["int"]);
      return bool(asInt(pos(a, 0)) % 2 === 0);
    },
  ],
  ["test_is_false", (a) => (ensureCount(a, 1), bool(is(pos(a, 0), "bool") && !truthy(pos(a, 0))))],
  ["test_is_true", (a) => (ensureCount(a, 1), bool(is(pos(a, 0), "bool") && truthy(pos(a, 0))))],
  [
    "test_is_divisibleby",
    (a) => {
      ensureVals(a, ["int", "int"]);
      return bool(asInt(pos(a, 0)) % asInt(pos(a, 1)) === 0);
    },
  ],
  ["test_is_string", typeTest("string")],
  ["test_is_integer", typeTest("int")],
  ["test_is_float", typeTest("float")],
  ["test_is_number", typeTest("int", "float")],
  ["test_is_iterable", typeTest("array", "string", "undefined")],
  ["test_is_sequence", typeTest("array", "string", "undefined")],
  ["test_is_mapping", typeTest("object")],
  [
    "test_is_lower",
    (a) => {
      ensureVals(a, ["string"]);
      spendRead(asString(pos(a, 0)).length);
      return bool(!/[A-Z]/.test(asString(pos(a, 0))));
    },
  ],
  [
    "test_is_upper",
    (a) => {
      ensureVals(a, ["string"]);
      spendRead(asString(pos(a, 0)).length);
      return bool(!/[a-z]/.test(asString(pos(a, 0))));
    },
  ],
  ["test_is_none", typeTest("none")],
  ["test_is_defined", (a) => (ensureCount(a, 1), bool(pos(a, 0).kind !== "undefined"))],
  ["test_is_undefined", typeTest("undefined")],
  ["test_is_eq", compareTest("eq")],
  ["test_is_equalto", compareTest("eq")],
  ["test_is_ge", compareTest("ge")],
  ["test_is_gt", compareTest("gt")],
  ["test_is_greaterthan", compareTest("gt")],
  ["test_is_lt", compareTest("lt")],
  ["test_is_lessthan", compareTest("lt")],
  ["test_is_ne", compareTest("ne")],
  ["test_is_in", isIn],
  [
    "test_is_test",
    (a) => {
      ensureVals(a, ["string"]);
      return bool(GLOBALS.has("test_is_" + asString(pos(a, 0))));
    },
  ],
  ["test_is_sameas", notImplemented("sameas test")],
  ["test_is_escaped", notImplemented("escaped test")],
  ["test_is_filter", notImplemented("filter test")],
]);

export { isIn };
