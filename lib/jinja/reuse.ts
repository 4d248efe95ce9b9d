/**
 * Converted input kept between renders. An agent loop renders the same tools every turn; turning
 * 250 tool objects into template values (fromJS) is a tenth of the render and makes most of what
 * the garbage collector has to copy. A converted value is reused only when the data given now is
 * the data it was made from (compared with a flattened copy of that data, `matchesTape`), and
 * kept only when the render left it as it was: templates can change objects and arrays in place
 * (`{% set tool.x = ... %}`, `append`), so after a render that changed any value the value is
 * compared with its data (`convertsTo`) and dropped if it changed. Nothing else about a render
 * depends on whether a value was reused: conversion runs outside the render budget either way.
 */
import { boundedCache } from "../cache.js";
import { type JValue, JsonFloat, PLAIN_WORD, STRUCTURAL_KEYS, changeCount, fromJS } from "./value.js";

interface Kept {
  markInput: boolean;
  value: JValue;
  /** The data `value` was made from, flattened (see tapeOf): what the next data is compared with. */
  tape: unknown[];
}

/**
 * Per variable name (the renderer names a few), the most recent conversions (most recent last).
 * The names are a BoundedCache; each name's list keeps its own rule, not a BoundedCache's: a
 * value is found by comparing data (not by a key), and is taken out while a render uses it and
 * put back only if the render left it as it was.
 */
const KEPT_NAMES = 16;
const KEPT_PER_NAME = 4;
const kept = boundedCache<string, Kept[]>(KEPT_NAMES);

/** A value converted for this render, and how to keep it afterwards. */
export interface Converted {
  value: JValue;
  /** After the render: keep the value for later renders if it is still what `data` converts to. */
  settle(): void;
}

/** `fromJS(data, markInput)`, or a kept value that is exactly that. */
export function convertReusable(name: string, data: unknown, markInput: boolean): Converted {
  const list = kept.get(name) ?? [];
  for (let i = list.length - 1; i >= 0; i--) {
    const k = list[i]!;
    // the same data as the value was made from (and the value was left as made, see keep)
    if (k.markInput !== markInput || !matchesTape(data, k.tape)) continue;
    // in use: taken out until the render has shown it left the value alone
    list.splice(i, 1);
    const before = changeCount();
    return { value: k.value, settle: () => keep(name, data, k, before) };
  }
  const before = changeCount();
  const value = fromJS(data, markInput);
  return {
    value,
    settle: () => {
      const tape: unknown[] = [];
      if (tapeOf(data, tape, 0)) keep(name, data, { markInput, value, tape }, before);
    },
  };
}

function keep(name: string, data: unknown, k: Kept, changesBefore: number): void {
  // a render that changed no value left this one alone; else compare: a render may also have
  // made two places share one object (`{% set a.x = b.x %}`), equal data, but a later change to
  // one would show in both, so a shared object is not kept either
  if (changeCount() !== changesBefore && !convertsTo(data, k.value, k.markInput, undefined, 0, new Set())) return;
  let list = kept.get(name);
  if (list === undefined) kept.set(name, (list = []));
  list.push(k);
  if (list.length > KEPT_PER_NAME) list.shift();
}

// ---- the data, flattened -------------------------------------------------------------------------

const ARRAY = Symbol("array");
const OBJECT = Symbol("object");
const FLOAT = Symbol("JsonFloat");

/**
 * Appends `x` to `tape` in depth-first order: a primitive as itself, an array as ARRAY, its
 * length and its items, a plain object as OBJECT, its key count and each key and value, a
 * JsonFloat as FLOAT and its number. False for anything else (Maps, Dates, class instances,
 * sparse arrays, very deep data): such data is not kept.
 */
function tapeOf(x: unknown, tape: unknown[], depth: number): boolean {
  if (typeof x !== "object" || x === null) {
    if (typeof x === "function" || typeof x === "symbol" || typeof x === "bigint") return false;
    tape.push(x);
    return true;
  }
  if (depth > MAX_DEPTH) return false;
  const proto = Object.getPrototypeOf(x);
  if (proto === Array.prototype) {
    const a = x as unknown[];
    tape.push(ARRAY, a.length);
    for (let i = 0; i < a.length; i++) if (!(i in a) || !tapeOf(a[i], tape, depth + 1)) return false;
    return true;
  }
  if (proto === Object.prototype) {
    const keys = Object.keys(x);
    tape.push(OBJECT, keys.length);
    for (const k of keys) {
      tape.push(k);
      if (!tapeOf((x as Record<string, unknown>)[k], tape, depth + 1)) return false;
    }
    return true;
  }
  if (x instanceof JsonFloat) {
    tape.push(FLOAT, x.value);
    return true;
  }
  return false;
}

/** Where matchesTape is in the tape. */
let at = 0;

/** Whether `x` flattens to exactly `tape`. */
function matchesTape(x: unknown, tape: readonly unknown[]): boolean {
  at = 0;
  return matchNext(x, tape, 0) && at === tape.length;
}

function matchNext(x: unknown, tape: readonly unknown[], depth: number): boolean {
  if (typeof x !== "object" || x === null) return Object.is(x, tape[at++]);
  if (depth > MAX_DEPTH) return false;
  const proto = Object.getPrototypeOf(x);
  if (proto === Array.prototype) {
    const a = x as unknown[];
    if (tape[at++] !== ARRAY || tape[at++] !== a.length) return false;
    for (let i = 0; i < a.length; i++) if (!(i in a) || !matchNext(a[i], tape, depth + 1)) return false;
    return true;
  }
  if (proto === Object.prototype) {
    const keys = Object.keys(x);
    if (tape[at++] !== OBJECT || tape[at++] !== keys.length) return false;
    for (const k of keys) if (tape[at++] !== k || !matchNext((x as Record<string, unknown>)[k], tape, depth + 1)) return false;
    return true;
  }
  if (x instanceof JsonFloat) return tape[at++] === FLOAT && Object.is(tape[at++], x.value);
  return false;
}

/** Forgets every kept value (tests, memory). */
export function clearReusedValues(): void {
  kept.clear();
}

/** The deepest data compared; deeper data is converted afresh (fromJS bounds its depth itself). */
const MAX_DEPTH = 256;

/**
 * Whether `fromJS(x, markInput, key)` would build a value equal to `v` in everything a render can
 * observe. Anything unusual (sparse arrays, bigints, Maps with colliding keys...) answers false:
 * a false "no" only costs a conversion.
 */
function convertsTo(x: unknown, v: JValue, markInput: boolean, key: string | undefined, depth: number, seen?: Set<JValue>): boolean {
  if (depth > MAX_DEPTH) return false;
  if (x === null) return v.kind === "none";
  if (x === undefined) return v.kind === "undefined" && v.hint === "";
  switch (typeof x) {
    case "boolean":
      return v.kind === "bool" && v.v === x;
    case "number":
      if (Number.isInteger(x) && !Object.is(x, -0)) return v.kind === "int" && v.v === x;
      return v.kind === "float" && Object.is(v.v, x);
    case "string":
      return v.kind === "string" && v.v === x && marksAre(v, markInput && !(key !== undefined && STRUCTURAL_KEYS.has(key) && PLAIN_WORD.test(x)));
    case "object":
      break;
    default:
      return false;
  }
  // plain objects and arrays first: one prototype read instead of a chain of instanceof
  const proto = Object.getPrototypeOf(x);
  if (proto !== Object.prototype) {
    if (Array.isArray(x)) return arrayConvertsTo(x, v, markInput, depth, seen);
    if (x instanceof JsonFloat) return v.kind === "float" && Object.is(v.v, x.value);
    if (x instanceof Map || x instanceof Date) return false;
  }
  if (v.kind !== "object" || !v.builtins || !once(v, seen)) return false;
  const keys = Object.keys(x);
  if (keys.length !== v.entries.size) return false;
  let i = 0;
  for (const entry of v.entries.values()) {
    const name = keys[i++]!;
    const k = entry[0];
    if (k.kind !== "string" || k.v !== name || !marksAre(k, markInput)) return false;
    if (!convertsTo((x as Record<string, unknown>)[name], entry[1], markInput, name, depth + 1, seen)) return false;
  }
  return true;
}

function arrayConvertsTo(x: unknown[], v: JValue, markInput: boolean, depth: number, seen: Set<JValue> | undefined): boolean {
  if (v.kind !== "array" || v.tuple || v.items.length !== x.length || !once(v, seen)) return false;
  for (let i = 0; i < x.length; i++) {
    if (!(i in x)) return false;
    const item = v.items[i];
    if (item === undefined || !convertsTo(x[i], item, markInput, undefined, depth + 1, seen)) return false;
  }
  return true;
}

/** Whether a container is met for the first time (always, when not watching for sharing). */
function once(v: JValue, seen: Set<JValue> | undefined): boolean {
  if (seen === undefined) return true;
  if (seen.has(v)) return false;
  seen.add(v);
  return true;
}

/** Whether string value `v` is marked whole (when `marked`) or not at all, as fromJS marks it. */
function marksAre(v: JValue & { kind: "string" }, marked: boolean): boolean {
  if (!marked || v.v.length === 0) return v.m === undefined;
  return v.m !== undefined && v.m.length === 2 && v.m[0] === 0 && v.m[1] === v.v.length;
}
