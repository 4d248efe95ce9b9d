// Random GBNF grammars (deterministic by seed) covering the whole syntax llama.cpp parses:
// literals with escapes, character classes, token ids, groups, every repetition form, comments,
// newlines inside groups; some with undefined rules, left recursion, or one mutated character.
// `safe` keeps out what would make llama.cpp itself hang or crash (min > max, deep nesting,
// long chains), so the result can be given to the reference harness.
import { mulberry32 } from "../../lib/test-model/random.js";

export interface GbnfGenOptions {
  seed: number;
  /** Only grammars llama.cpp survives (for the reference). Default true. */
  safe?: boolean;
}

const CHARS = ["a", "b", "z", "0", " ", "é", "日", "😀", "\\n", "\\t", "\\\\", '\\"', "\\x41", "\\u00e9", "\\U0001F600", "\\[", "\\]", "-"];

export function randomGbnf(o: GbnfGenOptions): string {
  const rng = mulberry32(o.seed);
  const safe = o.safe !== false;
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rng() * a.length)]!;
  const int = (n: number): number => Math.floor(rng() * n);
  const nRules = 1 + int(6);
  const names = ["root", ...Array.from({ length: nRules - 1 }, (_, i) => `r${i}`), ...(rng() < 0.1 ? ["undefined-rule"] : [])];

  const item = (depth: number): string => {
    const r = rng();
    let s: string;
    if (r < 0.3) s = `"${Array.from({ length: int(4) }, () => pick(CHARS)).join("")}"`;
    else if (r < 0.45) s = `[${rng() < 0.3 ? "^" : ""}${Array.from({ length: 1 + int(3) }, () => (rng() < 0.5 ? `${pick(["a", "0", "A", "\\x20"])}-${pick(["z", "9", "Z", "\\x7e"])}` : pick(CHARS.filter((c) => c !== "-")))).join("")}]`;
    else if (r < 0.65) s = pick(names);
    else if (r < 0.75 && depth < 4) s = `(${alternatives(depth + 1)})`;
    else if (r < 0.82) s = ".";
    else if (r < 0.87) s = `<[${int(50)}]>`;
    else s = `"${pick(CHARS)}"`;
    const q = rng();
    if (q < 0.15) s += "*";
    else if (q < 0.25) s += "+";
    else if (q < 0.35) s += "?";
    else if (q < 0.42) s += `{${int(4)}}`;
    else if (q < 0.47) s += `{${int(3)},}`;
    else if (q < 0.55) {
      const m = int(4);
      s += `{${m},${m + int(5)}}`;
    }
    return s;
  };
  const sequence = (depth: number): string => Array.from({ length: int(4) }, () => item(depth)).join(" ");
  const alternatives = (depth: number): string =>
    Array.from({ length: 1 + int(3) }, () => sequence(depth)).join(depth > 0 && rng() < 0.3 ? "\n  | " : " | ") + (rng() < 0.1 ? " # a comment" : "");

  let text = names
    .filter((n) => n !== "undefined-rule")
    .map((n) => `${n} ::= ${rng() < 0.08 ? `${n} ` : ""}${alternatives(0)}`)
    .join("\n") + "\n";
  if (rng() < 0.25) {
    // one mutated character: syntax errors in every position
    // by code point, so a mutation never leaves half a surrogate pair
    const cps = Array.from(text);
    const at = int(cps.length);
    const ch = pick(['"', "(", ")", "[", "]", "{", "}", "|", ":", "=", "\\", "\n", " ", "*", "#", "<", ">", "x"]);
    const kind = rng();
    if (kind < 0.33) cps.splice(at, 0, ch);
    else if (kind < 0.66) cps.splice(at, 1);
    else cps.splice(at, 1, ch);
    text = cps.join("");
  }
  if (safe) {
    // what the reference itself cannot survive: {m,n} with m > n (its count underflows)
    for (const m of text.matchAll(/\{\s*(\d+)\s*,\s*(\d+)\s*\}/g)) if (Number(m[1]) > Number(m[2])) return randomGbnf({ ...o, seed: o.seed + 1_000_003 });
  }
  return text;
}
