/**
 * GBNF for the JSON numbers between decimal bounds (default mode; no reference counterpart:
 * llama.cpp bounds integers only). A number is a sign and a magnitude I.F; for each sign the
 * bounds become a magnitude interval [lo, hi], and a magnitude is compared digit-wise: an integer
 * part strictly inside (lo, hi) takes any fraction, one equal to lo's (hi's) integer part takes a
 * fraction at least (at most) lo's (hi's) fraction, compared as digit strings (regex-free
 * automata written with integerRangeRule for the integer parts). Exponents are admitted only
 * where every magnitude of that sign is allowed.
 */
import { integerRangeRule } from "./integer-range.js";

/** A non-negative decimal: integer part and fraction digits without trailing zeros. */
interface Dec {
  int: bigint;
  frac: string;
}

export interface NumberBounds {
  min: number | null;
  minExclusive: boolean;
  max: number | null;
  maxExclusive: boolean;
}

/** Bounds this construction does not cover (caught below: the normalizer reports them). */
class BeyondConstruction extends Error {}

const EXPONENT = "([eE] [-+]? [0-9]+)?";
const ANY_INT = '("0" | [1-9] [0-9]*)';

/** |x| as an exact decimal (the double's shortest round-trip digits, as JSON writes it). */
function decOf(x: number): Dec {
  const [m, e] = Math.abs(x).toExponential().split("e");
  const digits = m!.replace(".", "");
  const exp = Number(e);
  let int: string;
  let frac: string;
  if (exp >= 0) {
    int = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
    frac = digits.slice(exp + 1);
  } else {
    int = "0";
    frac = "0".repeat(-exp - 1) + digits;
  }
  return { int: BigInt(int), frac: frac.replace(/0+$/, "") };
}

const cmp = (a: Dec, b: Dec): number => (a.int !== b.int ? (a.int < b.int ? -1 : 1) : a.frac === b.frac ? 0 : a.frac.padEnd(64, "0") < b.frac.padEnd(64, "0") ? -1 : 1);
const digitClass = (lo: number, hi: number): string => (lo === hi ? `"${lo}"` : `[${lo}-${hi}]`);

/** Fractions F (digits after the point; "" when there is none) with F >= f (or > f). */
function fracAtLeast(f: string, strict: boolean): { rule: string; empty: boolean } {
  if (f === "") return strict ? { rule: '"0"* [1-9] [0-9]*', empty: false } : { rule: "[0-9]+", empty: true };
  const alts: string[] = [];
  for (let k = 0; k < f.length; k++) {
    const d = Number(f[k]);
    if (d < 9) alts.push(`${k > 0 ? `"${f.slice(0, k)}" ` : ""}${digitClass(d + 1, 9)} [0-9]*`);
  }
  alts.push(strict ? `"${f}" "0"* [1-9] [0-9]*` : `"${f}" [0-9]*`);
  return { rule: `(${alts.join(" | ")})`, empty: false };
}

/** Fractions F with F <= f (or < f). */
function fracAtMost(f: string, strict: boolean): { rule: string; empty: boolean } {
  if (f === "") return strict ? { rule: "", empty: false } : { rule: '"0"+', empty: true };
  const alts: string[] = [];
  for (let k = 0; k < f.length; k++) {
    const d = Number(f[k]);
    if (d > 0) alts.push(`${k > 0 ? `"${f.slice(0, k)}" ` : ""}${digitClass(0, d - 1)} [0-9]*`);
    // a proper prefix of f padded with zeros is below f
    if (k > 0) alts.push(`"${f.slice(0, k)}" "0"*`);
  }
  if (!strict) alts.push(`"${f}" "0"*`);
  return { rule: `(${alts.join(" | ")})`, empty: true };
}

const withFrac = (int: string, f: { rule: string; empty: boolean }): string | null => {
  if (f.rule === "") return f.empty ? int : null;
  return f.empty ? `${int} ("." ${f.rule})?` : `${int} "." ${f.rule}`;
};

/** Magnitudes m >= 0 with lo <= m <= hi (exclusive where said; hi null: none). */
function magnitudes(lo: Dec, loEx: boolean, hi: Dec | null, hiEx: boolean): string[] {
  if (hi !== null && (cmp(lo, hi) > 0 || (cmp(lo, hi) === 0 && (loEx || hiEx)))) return [];
  const out: string[] = [];
  if (hi === null && lo.int === 0n && lo.frac === "") {
    if (!loEx) return [`${ANY_INT} ("." [0-9]+)? ${EXPONENT}`];
    return [`([1-9] [0-9]* ("." [0-9]+)? | "0" "." "0"* [1-9] [0-9]*) ${EXPONENT}`]; // all but zero
  }
  if (hi !== null && lo.int === hi.int) {
    // one integer part: both fractions bound it; only when one side is trivial
    if (lo.frac === "" && !loEx) {
      const r = withFrac(`"${lo.int}"`, fracAtMost(hi.frac, hiEx));
      return r === null ? [] : [r];
    }
    throw new BeyondConstruction();
  }
  // integer part = lo.int, fraction >= lo.frac
  const low = withFrac(`"${lo.int}"`, fracAtLeast(lo.frac, loEx));
  if (low !== null) out.push(low);
  // integer parts strictly between
  const from = lo.int + 1n;
  const to = hi === null ? null : hi.int - 1n;
  if (to === null || from <= to) out.push(`${integerRangeRule(from, to)} ("." [0-9]+)?`);
  if (hi !== null) {
    const high = withFrac(`"${hi.int}"`, fracAtMost(hi.frac, hiEx));
    if (high !== null) out.push(high);
  }
  return out;
}

/** The rule, or null when the bounds are beyond this construction (one integer part, two fractions). */
export function numberRangeRule(b: NumberBounds): string | null {
  const zero: Dec = { int: 0n, frac: "" };
  try {
    const alts: string[] = [];
    // x >= 0: magnitude in [max(min, 0), max]
    if (b.max === null || b.max >= 0) {
      const lo = b.min !== null && b.min > 0 ? decOf(b.min) : zero;
      const loEx = b.min !== null && b.min >= 0 && b.minExclusive;
      alts.push(...magnitudes(lo, loEx, b.max === null ? null : decOf(b.max), b.maxExclusive));
    }
    // x < 0: magnitude in [max(-max, 0), -min], "-0" included where 0 is
    if (b.min === null || b.min <= 0) {
      const lo = b.max !== null && b.max < 0 ? decOf(b.max) : zero;
      const loEx = b.max !== null && b.max <= 0 && b.maxExclusive;
      alts.push(...magnitudes(lo, loEx, b.min === null ? null : decOf(b.min), b.minExclusive).map((a) => `"-" ${a}`));
    }
    if (alts.length === 0) return null;
    return alts.length === 1 ? alts[0]! : `(${alts.join(" | ")})`;
  } catch (e) {
    if (e instanceof BeyondConstruction) return null;
    throw e;
  }
}
