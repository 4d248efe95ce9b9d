/**
 * Converted input kept between renders. An agent loop renders the same tools every turn; turning
 * 250 tool objects into template values (fromJS) is a tenth of the render and makes most of what
 * the garbage collector has to copy. A converted value is reused only when the data given now
 * converts to exactly it (`convertsTo`: same shapes, kinds, strings, keys, key order and input
 * marks), and kept only when the render left it as it was: templates can change objects and
 * arrays in place (`{% set tool.x = ... %}`, `append`), so after a render that changed any value
 * the value is compared with its data again and dropped if it changed. Nothing else about a render depends on
 * whether a value was reused: conversion runs outside the render budget either way.
 */
import { type JValue, JsonFloat, PLAIN_WORD, STRUCTURAL_KEYS, changeCount, fromJS } from "./value.js";

interface Kept {
  markInput: boolean;
  value: JValue;
}

/** Per variable name, the most recent conversions (most recent last). */
const KEPT_PER_NAME = 4;
const kept = new Map<string, Kept[]>();

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
    if (k.markInput !== markInput || !convertsTo(data, k.value, markInput, undefined, 0)) continue;
    // in use: taken out until the render has shown it left the value alone
    list.splice(i, 1);
    const before = changeCount();
    return { value: k.value, settle: () => keep(name, data, k, before) };
  }
  const before = changeCount();
  const value = fromJS(data, markInput);
  return { value, settle: () => keep(name, data, { markInput, value }, before) };
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
