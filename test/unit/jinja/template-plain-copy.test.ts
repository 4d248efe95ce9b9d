// cloneData (lib/jinja/plain-copy.ts) returns what structuredClone returns, for JSON-like
// data and for everything it hands to structuredClone.
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { cloneData } from "../../../lib/jinja/plain-copy.js";
import { JsonFloat } from "../../../lib/jinja/value.js";

/** Same result as structuredClone: equal values, same prototypes, same key order, same throw. */
function same(x: unknown): void {
  let want: unknown;
  let wantError: unknown;
  try {
    want = structuredClone(x);
  } catch (e) {
    wantError = e;
  }
  if (wantError !== undefined) {
    expect(() => cloneData(x)).toThrow((wantError as Error).message);
    return;
  }
  const got = cloneData(x);
  expect(got).toStrictEqual(want);
  expect(shape(got)).toEqual(shape(want));
  if (typeof x === "object" && x !== null) expect(got).not.toBe(x);
}

/** Prototypes and key orders, 30 levels down (cyclic data too). */
function shape(x: unknown, depth = 0): unknown {
  if (typeof x !== "object" || x === null) return Object.is(x, -0) ? "-0" : typeof x;
  if (depth > 30) return "deep";
  return [Object.getPrototypeOf(x)?.constructor?.name ?? null, Object.keys(x), Object.values(x).map((v) => shape(v, depth + 1))];
}

describe("cloneData", () => {
  it("copies JSON-like data as structuredClone does", () => {
    fc.assert(fc.property(fc.jsonValue(), (x) => same(x)), { numRuns: 300 });
    same({ type: "object", properties: { a: { type: "string" }, 2: 1, 1: -0 }, required: ["a"], n: NaN, u: undefined });
  });

  it("hands anything else to structuredClone", () => {
    const sparse = [1, , 3];
    const extra = Object.assign([1, 2], { x: 1 });
    const proto = JSON.parse('{"__proto__": {"a": 1}, "b": 2}');
    const nullProto = Object.assign(Object.create(null), { a: 1 });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    const cases: unknown[] = [
      new JsonFloat(1),
      { f: new JsonFloat(2.5) },
      new Map([["a", 1]]),
      { d: new Date(0) },
      sparse,
      extra,
      proto,
      nullProto,
      cyclic,
      deep,
      { fn: () => 1 },
      { s: Symbol("x") },
      10n,
    ];
    for (const x of cases) same(x);
  });
});
