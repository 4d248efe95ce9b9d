/**
 * GBNF for the JSON numbers between integral bounds (default mode; no reference counterpart:
 * llama.cpp bounds integers only). A number is a sign, an integer part I and maybe a fraction:
 * with no fraction (or only zeros) it is I itself; with a nonzero fraction it lies strictly
 * between I and I+1. So each sign gets two integer ranges, written with integerRangeRule:
 * the I that are allowed exactly, and the I whose open interval (I, I+1) is inside the bounds.
 * Exponents are admitted only where every value of that sign is allowed.
 */
import { integerRangeRule } from "./integer-range.js";

export interface NumberBounds {
  min: bigint | null;
  minExclusive: boolean;
  max: bigint | null;
  maxExclusive: boolean;
}

const NONZERO_FRACTION = '"." "0"* [1-9] [0-9]*';
const ZERO_FRACTION = '("." "0"+)?';
const EXPONENT = '([eE] [-+]? [0-9]+)?';

/** Magnitudes I in [lo, hi] (hi null: none) as GBNF, or null when empty. */
function magnitudes(lo: bigint, hi: bigint | null): string | null {
  if (lo < 0n) lo = 0n;
  if (hi !== null && hi < lo) return null;
  if (lo === 0n && hi === null) return '("0" | [1-9] [0-9]*)';
  return integerRangeRule(lo, hi);
}

/** The alternatives for one sign: magnitudes allowed exactly, and with a nonzero fraction. */
function side(exact: [bigint, bigint | null], fraction: [bigint, bigint | null], unbounded: boolean | "nonzero", sign: string): string[] {
  if (unbounded === true) return [`${sign}("0" | [1-9] [0-9]*) ("." [0-9]+)? ${EXPONENT}`];
  // every value of this sign but zero (`exclusiveMinimum: 0`): any nonzero mantissa
  if (unbounded === "nonzero") return [`${sign}([1-9] [0-9]* ("." [0-9]+)? | "0" ${NONZERO_FRACTION}) ${EXPONENT}`];
  const out: string[] = [];
  const e = magnitudes(exact[0], exact[1]);
  if (e !== null) out.push(`${sign}${e} ${ZERO_FRACTION}`);
  const f = magnitudes(fraction[0], fraction[1]);
  if (f !== null) out.push(`${sign}${f} ${NONZERO_FRACTION}`);
  return out;
}

export function numberRangeRule(b: NumberBounds): string {
  const { min, max } = b;
  const minIn = b.minExclusive ? 1n : 0n;
  const maxIn = b.maxExclusive ? 1n : 0n;
  // x = +m, m >= 0: exact m in [min(+1), max(-1)]; fractional m with floor I in [min, max - 1]
  const pos = side(
    [min === null ? 0n : min + minIn, max === null ? null : max - maxIn],
    [min === null ? 0n : min, max === null ? null : max - 1n],
    max === null && (min === null || min < 0n || (min === 0n && !b.minExclusive)) ? true : max === null && min === 0n ? "nonzero" : false,
    "",
  );
  // x = -m, m >= 0: exact m in [-max(+1), -min(-1)]; fractional m with floor I in [-max, -min - 1]
  const neg = side(
    [max === null ? 0n : -max + maxIn, min === null ? null : -min - minIn],
    [max === null ? 0n : -max, min === null ? null : -min - 1n],
    min === null && (max === null || max > 0n || (max === 0n && !b.maxExclusive)) ? true : min === null && max === 0n ? "nonzero" : false,
    '"-" ',
  );
  const alts = [...pos, ...neg];
  return alts.length === 1 ? alts[0]! : `(${alts.join(" | ")})`;
}
