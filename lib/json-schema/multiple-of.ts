/**
 * `multipleOf` for the default mode (no reference counterpart: llama.cpp drops it). With the
 * divisor a decimal m = p / 10^k, a number I.F is a multiple when I·10^k plus its first k fraction
 * digits is divisible by p and every fraction digit past the k-th is 0: a DFA over the number's
 * characters that keeps that remainder (p·k states), the value's decimal meaning, as the corpus's
 * labels have it (`10.99` is a multiple of 0.01, whatever a double's division says). A number
 * written with an exponent is not admitted (a valid value rejected, never the reverse).
 */
import { determinize, type Dfa } from "./regex-dfa.js";

/** Largest p and k taken: the automaton has about p·(k+2) states. */
const MAX_P = 500n;
const MAX_K = 8;

export interface MultipleOfOptions {
  /** No fraction part. */
  integer: boolean;
  /** `nonNegative`: no minus sign (`minimum: 0`); `positive`: also not zero (`exclusiveMinimum: 0`). */
  signs: "any" | "nonNegative" | "positive";
}

/** m as p / 10^k with p a positive integer, or null past the limits. */
export function decimalRatio(m: number): { p: bigint; k: number } | null {
  if (!(m > 0) || !Number.isFinite(m)) return null;
  const [mant, e] = m.toExponential().split("e");
  const digits = mant!.replace(".", "");
  const exp = Number(e);
  const k = Math.max(0, digits.length - 1 - exp);
  const p = BigInt(digits) * 10n ** BigInt(Math.max(0, exp - (digits.length - 1)));
  return p <= MAX_P && k <= MAX_K ? { p, k } : null;
}

const ch = (c: string): [number, number] => [c.charCodeAt(0), c.charCodeAt(0)];
type Phase = "start" | "sign" | "zero" | "int" | "dot" | "frac" | "tail";

/** The DFA of the JSON numbers (no exponent) that are multiples of m, or null past the limits. */
export function multipleOfDfa(m: number, o: MultipleOfOptions): Dfa | null {
  const ratio = decimalRatio(m);
  if (ratio === null) return null;
  const p = Number(ratio.p);
  const { k } = ratio;
  // r: the value read so far times 10^j (j fraction digits) mod p; nz: a non-zero digit seen
  type State = [Phase, number, number, boolean];
  const pow10 = (n: number): number => Number(10n ** BigInt(n) % ratio.p);
  const digitEdges = (s: State, next: (d: number) => State | null): Array<{ ranges: Array<[number, number]>; target: State }> => {
    const out: Array<{ ranges: Array<[number, number]>; target: State }> = [];
    for (let d = 0; d <= 9; d++) {
      const t = next(d);
      if (t !== null) out.push({ ranges: [ch(String(d))], target: t });
    }
    void s;
    return out;
  };
  return determinize<State>(
    ["start", 0, 0, false],
    ([phase, r, j, nz]) => {
      if (o.signs === "positive" && !nz) return false;
      if (phase === "zero" || phase === "int") return (r * pow10(k)) % p === 0;
      if (phase === "frac") return (r * pow10(k - j)) % p === 0;
      if (phase === "tail") return r % p === 0;
      return false;
    },
    ([phase, r, j, nz]) => {
      const step = (d: number): number => (r * 10 + d) % p;
      switch (phase) {
        case "start":
        case "sign": {
          const out = digitEdges(["start", r, j, nz], (d) => (d === 0 ? ["zero", 0, 0, false] : ["int", d % p, 0, true]));
          if (phase === "start" && o.signs === "any") out.push({ ranges: [ch("-")], target: ["sign", 0, 0, false] });
          return out;
        }
        case "zero":
        case "int": {
          const out = phase === "int" ? digitEdges(["int", r, j, nz], (d) => ["int", step(d), 0, nz || d > 0]) : [];
          if (!o.integer) out.push({ ranges: [ch(".")], target: ["dot", r, 0, nz] });
          return out;
        }
        case "dot":
        case "frac":
          // the first k fraction digits count; later ones must be 0
          return digitEdges(["frac", r, j, nz], (d) => (j < k ? ["frac", step(d), j + 1, nz || d > 0] : d === 0 ? ["tail", r, j, nz] : null));
        case "tail":
          return [{ ranges: [ch("0")], target: ["tail", r, j, nz] }];
      }
    },
  );
}
