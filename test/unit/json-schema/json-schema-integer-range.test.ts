import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonSchemaToGbnf } from "./json-schema-reference-mode.js";
import { integerRangeRule } from "../../../lib/json-schema/integer-range.js";
import { gbnfToRegExp } from "./json-schema-gbnf-to-regex.js";

/** The language of an integer-range rule, as a RegExp over decimal text. */
const rangeRegex = (min: bigint | null, max: bigint | null): RegExp => gbnfToRegExp(`root ::= ${integerRangeRule(min, max)}\n`);

describe("integer range expansion", () => {
  it("accepts exactly the integers in a bounded range (property)", () => {
    fc.assert(
      fc.property(fc.bigInt(-100000n, 100000n), fc.bigInt(0n, 100000n), fc.array(fc.bigInt(-250000n, 250000n), { maxLength: 30 }), (lo, span, probes) => {
        const hi = lo + span;
        const re = rangeRegex(lo, hi);
        for (const v of [lo, hi, lo - 1n, hi + 1n, ...probes]) {
          expect(re.test(v.toString()), `${v} in [${lo}, ${hi}]`).toBe(v >= lo && v <= hi);
        }
      }),
      { numRuns: Number(process.env.JSON_SCHEMA_RUNS ?? 150) },
    );
  });

  it("accepts exactly the integers above a lower bound, up to the digit limit (property)", () => {
    fc.assert(
      fc.property(fc.bigInt(-(10n ** 12n), 10n ** 12n), fc.array(fc.bigInt(-(10n ** 13n), 10n ** 13n), { maxLength: 30 }), (lo, probes) => {
        const re = rangeRegex(lo, null);
        for (const v of [lo, lo - 1n, lo + 1n, 0n, ...probes]) expect(re.test(v.toString()), `${v} >= ${lo}`).toBe(v >= lo);
      }),
      { numRuns: Number(process.env.JSON_SCHEMA_RUNS ?? 150) },
    );
  });

  it("accepts exactly the integers below an upper bound (property)", () => {
    fc.assert(
      fc.property(fc.bigInt(-(10n ** 12n), 10n ** 12n), fc.array(fc.bigInt(-(10n ** 13n), 10n ** 13n), { maxLength: 30 }), (hi, probes) => {
        const re = rangeRegex(null, hi);
        for (const v of [hi, hi - 1n, hi + 1n, 0n, ...probes]) expect(re.test(v.toString()), `${v} <= ${hi}`).toBe(v <= hi);
      }),
      { numRuns: Number(process.env.JSON_SCHEMA_RUNS ?? 150) },
    );
  });

  it("open bounds are exact for every bound in [-1000, 1000]", () => {
    const probes = [0, 1, 9, 10, 11, 19, 99, 100, 101, 109, 110, 111, 199, 999, 1000, 1001, 1010, 1100, 1999, 8000, 10000, 123456];
    const all = [...probes, ...probes.map((p) => -p)].map(BigInt);
    for (let b = -1000n; b <= 1000n; b++) {
      const lower = rangeRegex(b, null);
      const upper = rangeRegex(null, b);
      for (const v of [b - 1n, b, b + 1n, b * 10n, b * 10n + 5n, ...all]) {
        if (lower.test(v.toString()) !== v >= b) throw new Error(`minimum ${b}: ${v}`);
        if (upper.test(v.toString()) !== v <= b) throw new Error(`maximum ${b}: ${v}`);
      }
    }
  });

  it("never accepts leading zeros", () => {
    for (const [lo, hi] of [
      [-5n, 5n],
      [0n, 100n],
      [null, 50n],
      [-20n, null],
    ] as const) {
      const re = rangeRegex(lo, hi);
      for (const bad of ["01", "007", "-01", "", "+1"]) expect(re.test(bad), `${bad} in [${lo}, ${hi}]`).toBe(false);
    }
  });

  it("handles the full int64 range without losing precision", () => {
    const re = rangeRegex(9007199254740993n, 9007199254740995n);
    expect(re.test("9007199254740993")).toBe(true);
    expect(re.test("9007199254740992")).toBe(false);
    expect(re.test("9007199254740996")).toBe(false);
  });
});

describe("integer bounds in schemas", () => {
  const accepts = (schema: object, text: string): boolean => gbnfToRegExp(jsonSchemaToGbnf(schema)).test(text);

  it("exclusive bounds are one step inside", () => {
    const s = { type: "integer", exclusiveMinimum: 3, exclusiveMaximum: 7 };
    expect(["3", "4", "6", "7"].map((t) => accepts(s, t))).toEqual([false, true, true, false]);
  });

  it("fractional bounds round inward (the reference truncates toward zero)", () => {
    // minimum 2.5 admits 3 but not 2; maximum -1.5 admits -2 but not -1
    const s = { type: "integer", minimum: 2.5, maximum: 10.9 };
    expect(["2", "3", "10", "11"].map((t) => accepts(s, t))).toEqual([false, true, true, false]);
    const n = { type: "integer", minimum: -5.5, maximum: -1.5 };
    expect(["-6", "-5", "-2", "-1"].map((t) => accepts(n, t))).toEqual([false, true, true, false]);
  });

  it("when both minimum and exclusiveMinimum are given, the tighter wins", () => {
    const s = { type: "integer", minimum: 0, exclusiveMinimum: 5, maximum: 100, exclusiveMaximum: 50 };
    expect(["5", "6", "49", "50"].map((t) => accepts(s, t))).toEqual([false, true, true, false]);
  });

  it("a lower bound with inner zeros keeps them (the reference admits 15 and 104 for minimum 105)", () => {
    const s = { type: "integer", minimum: 105 };
    expect(["15", "104", "100", "10", "105", "106", "1000"].map((t) => accepts(s, t))).toEqual([false, false, false, false, true, true, true]);
    // and a `1` inside the bound does not forbid a longer number starting with 0 there
    const b = { type: "integer", minimum: 810 };
    expect(["809", "810", "8000", "8100", "999"].map((t) => accepts(b, t))).toEqual([false, true, true, true, true]);
    const m = { type: "integer", maximum: -2003 };
    expect(["-23", "-2002", "-2003", "-2010", "-30000"].map((t) => accepts(m, t))).toEqual([false, false, true, true, true]);
  });
});
