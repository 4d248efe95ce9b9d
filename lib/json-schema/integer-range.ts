/**
 * GBNF for the decimal integers in a range, written the way llama.cpp's converter writes it
 * (`build_min_max_int`): a bounded range is split into runs of equal digit count and each run into
 * digit-wise alternatives; an open range bounds the digit count (16 by default) instead.
 * Bounds are bigints so the full int64 range is exact; `null` means "no bound".
 */
import { internalError } from "../errors.js";

const OPEN_DECIMALS = 16;

export function integerRangeRule(min: bigint | null, max: bigint | null): string {
  if (min === null && max === null) throw internalError("integerRangeRule needs at least one bound");
  const out: string[] = [];
  minMaxInt(min, max, out, OPEN_DECIMALS, true);
  return `(${out.join("")})`;
}

function digitRange(out: string[], from: string, to: string): void {
  out.push(from === to ? `[${from}]` : `[${from}-${to}]`);
}

/** `[0-9]` repeated between `min` and `max` times (`max` Infinity = unbounded). */
function moreDigits(out: string[], min: number, max: number): void {
  out.push("[0-9]");
  if (min === max && min === 1) return;
  out.push(`{${min}`);
  if (max !== min) out.push(`,${max === Infinity ? "" : max}`);
  out.push("}");
}

const shift = (c: string, by: number): string => String.fromCharCode(c.charCodeAt(0) + by);

/** Numbers between `from` and `to`, two digit strings of the same length. */
function uniformRange(out: string[], from: string, to: string): void {
  let i = 0;
  while (i < from.length && i < to.length && from[i] === to[i]) i++;
  if (i > 0) out.push(`"${from.slice(0, i)}"`);
  if (i >= from.length || i >= to.length) return;
  if (i > 0) out.push(" ");
  const subLen = from.length - i - 1;
  const f = from[i]!;
  const t = to[i]!;
  if (subLen === 0) {
    out.push(`[${f}-${t}]`);
    return;
  }
  const fromSub = from.slice(i + 1);
  const toSub = to.slice(i + 1);
  const zeros = "0".repeat(subLen);
  const nines = "9".repeat(subLen);
  let toReached = false;
  out.push("(");
  if (fromSub === zeros) {
    digitRange(out, f, shift(t, -1));
    out.push(" ");
    moreDigits(out, subLen, subLen);
  } else {
    out.push(`[${f}] (`);
    uniformRange(out, fromSub, nines);
    out.push(")");
    if (f < shift(t, -1)) {
      out.push(" | ");
      if (toSub === nines) {
        digitRange(out, shift(f, 1), t);
        toReached = true;
      } else {
        digitRange(out, shift(f, 1), shift(t, -1));
      }
      out.push(" ");
      moreDigits(out, subLen, subLen);
    }
  }
  if (!toReached) {
    out.push(" | ");
    digitRange(out, t, t);
    out.push(" ");
    uniformRange(out, zeros, toSub);
  }
  out.push(")");
}

/**
 * The digits that may follow a fixed first digit when the number must reach `rest` (same length
 * or longer). The reference parses `rest` as a number, which drops its leading zeros, so
 * `minimum: 105` also admitted 15 and 104; a leading zero is handled here as a digit of its own.
 * Without a leading zero the output is the reference's.
 */
function lowerBoundSuffix(rest: string, out: string[], decimalsLeft: number): void {
  if (rest.length < 2 || rest[0] !== "0") {
    minMaxInt(BigInt(rest), null, out, decimalsLeft, false);
    return;
  }
  const lessDecimals = Math.max(decimalsLeft - 1, 1);
  out.push("[0] (");
  lowerBoundSuffix(rest.slice(1), out, lessDecimals);
  out.push(") | [1-9] ");
  moreDigits(out, rest.length - 1, lessDecimals);
}

function minMaxInt(min: bigint | null, max: bigint | null, out: string[], decimalsLeft: number, topLevel: boolean): void {
  if (min !== null && max !== null) {
    if (min < 0n && max < 0n) {
      out.push('"-" (');
      minMaxInt(-max, -min, out, decimalsLeft, true);
      out.push(")");
      return;
    }
    if (min < 0n) {
      out.push('"-" (');
      minMaxInt(0n, -min, out, decimalsLeft, true);
      out.push(") | ");
      min = 0n;
    }
    let minS = min.toString();
    const maxS = max.toString();
    for (let digits = minS.length; digits < maxS.length; digits++) {
      uniformRange(out, minS, "9".repeat(digits));
      minS = `1${"0".repeat(digits)}`;
      out.push(" | ");
    }
    uniformRange(out, minS, maxS);
    return;
  }

  const lessDecimals = Math.max(decimalsLeft - 1, 1);

  if (min !== null) {
    if (min < 0n) {
      out.push('"-" (');
      minMaxInt(null, -min, out, decimalsLeft, false);
      out.push(") | [0] | [1-9] ");
      moreDigits(out, 0, decimalsLeft - 1);
    } else if (min === 0n) {
      if (topLevel) {
        out.push("[0] | [1-9] ");
        moreDigits(out, 0, lessDecimals);
      } else {
        moreDigits(out, 1, decimalsLeft);
      }
    } else if (min <= 9n) {
      const c = min.toString();
      const rangeStart = topLevel ? "1" : "0";
      if (c > rangeStart) {
        digitRange(out, rangeStart, shift(c, -1));
        out.push(" ");
        moreDigits(out, 1, lessDecimals);
        out.push(" | ");
      }
      digitRange(out, c, "9");
      out.push(" ");
      moreDigits(out, 0, lessDecimals);
    } else {
      const minS = min.toString();
      const len = minS.length;
      const c = minS[0]!;
      // Inside a number a smaller first digit is fine when more digits follow, `0` included; the
      // reference only emits this branch for c > 1, so e.g. `minimum: 810` rejected 8000.
      if (c > "1" || (!topLevel && c === "1")) {
        digitRange(out, topLevel ? "1" : "0", shift(c, -1));
        out.push(" ");
        moreDigits(out, len, lessDecimals);
        out.push(" | ");
      }
      digitRange(out, c, c);
      out.push(" (");
      lowerBoundSuffix(minS.slice(1), out, lessDecimals);
      out.push(")");
      if (c < "9") {
        out.push(" | ");
        digitRange(out, shift(c, 1), "9");
        out.push(" ");
        moreDigits(out, len - 1, lessDecimals);
      }
    }
    return;
  }

  // only an upper bound
  if (max! >= 0n) {
    if (topLevel) {
      out.push('"-" [1-9] ');
      moreDigits(out, 0, lessDecimals);
      out.push(" | ");
    }
    minMaxInt(0n, max, out, decimalsLeft, true);
  } else {
    out.push('"-" (');
    minMaxInt(-max!, null, out, decimalsLeft, false);
    out.push(")");
  }
}
