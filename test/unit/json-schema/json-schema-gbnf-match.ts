/**
 * Test helper: a small GBNF recognizer for the grammars this compiler writes (one `name ::= body`
 * per line), recursive rules included, where json-schema-gbnf-to-regex.ts only takes
 * non-recursive ones. It computes, per rule and start position, the set of positions the rule can
 * end at (memoized), over the text's code points, as llama.cpp's grammar matches them. Meant for
 * short texts; not a general GBNF implementation (no tokens, no left recursion).
 */

type Item =
  | { k: "lit"; cps: number[] }
  | { k: "class"; negate: boolean; ranges: Array<[number, number]> }
  | { k: "ref"; name: string }
  | { k: "group"; alts: Item[][] }
  | { k: "rep"; item: Item; min: number; max: number };

function readChar(src: string, i: number): [number, number] {
  if (src[i] !== "\\") return [src.codePointAt(i)!, i + (src.codePointAt(i)! > 0xffff ? 2 : 1)];
  const c = src[i + 1]!;
  const hex = c === "x" ? 2 : c === "u" ? 4 : c === "U" ? 8 : 0;
  if (hex > 0) return [parseInt(src.slice(i + 2, i + 2 + hex), 16), i + 2 + hex];
  const simple: Record<string, number> = { n: 10, r: 13, t: 9 };
  return [simple[c] ?? c.codePointAt(0)!, i + 2];
}

function parseBody(src: string): Item[][] {
  let i = 0;
  const ws = () => {
    while (src[i] === " ") i++;
  };
  const alts = (): Item[][] => {
    const out: Item[][] = [[]];
    for (;;) {
      ws();
      if (i >= src.length || src[i] === ")") return out;
      if (src[i] === "|") {
        i++;
        out.push([]);
        continue;
      }
      let item: Item;
      const c = src[i]!;
      if (c === '"') {
        i++;
        const cps: number[] = [];
        while (src[i] !== '"') {
          const [cp, j] = readChar(src, i);
          cps.push(cp);
          i = j;
        }
        i++;
        item = { k: "lit", cps };
      } else if (c === "[") {
        i++;
        const negate = src[i] === "^";
        if (negate) i++;
        const ranges: Array<[number, number]> = [];
        while (src[i] !== "]") {
          const [a, j] = readChar(src, i);
          i = j;
          if (src[i] === "-" && src[i + 1] !== "]") {
            const [b, k] = readChar(src, i + 1);
            i = k;
            ranges.push([a, b]);
          } else ranges.push([a, a]);
        }
        i++;
        item = { k: "class", negate, ranges };
      } else if (c === "(") {
        i++;
        const inner = alts();
        i++; // )
        item = { k: "group", alts: inner };
      } else if (c === ".") {
        i++;
        item = { k: "class", negate: true, ranges: [] };
      } else {
        const m = /^[a-zA-Z0-9-]+/.exec(src.slice(i))!;
        i += m[0].length;
        item = { k: "ref", name: m[0] };
      }
      const q = src[i];
      if (q === "*") (i++, (item = { k: "rep", item, min: 0, max: Infinity }));
      else if (q === "+") (i++, (item = { k: "rep", item, min: 1, max: Infinity }));
      else if (q === "?") (i++, (item = { k: "rep", item, min: 0, max: 1 }));
      else if (q === "{") {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i))!;
        i += m[0].length;
        const min = Number(m[1]);
        const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
        item = { k: "rep", item, min, max };
      }
      out.at(-1)!.push(item);
    }
  };
  return alts();
}

export class GbnfMatcher {
  private readonly rules = new Map<string, Item[][]>();

  constructor(gbnf: string) {
    for (const line of gbnf.split("\n")) {
      const m = /^([a-zA-Z0-9-]+) ::= (.*)$/.exec(line);
      if (m) this.rules.set(m[1]!, parseBody(m[2]!));
    }
  }

  /** Whether the rule `root` matches all of `text`. */
  matches(text: string, root = "root"): boolean {
    const cps = [...text].map((c) => c.codePointAt(0)!);
    const memo = new Map<string, Set<number>>();
    const active = new Set<string>();
    const rule = (name: string, pos: number): Set<number> => {
      const key = `${name}@${pos}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      if (active.has(key)) throw new Error(`left recursion through ${name}`);
      const body = this.rules.get(name);
      if (body === undefined) throw new Error(`no rule ${name}`);
      active.add(key);
      const out = alts(body, pos);
      active.delete(key);
      memo.set(key, out);
      return out;
    };
    const alts = (as: Item[][], pos: number): Set<number> => {
      const out = new Set<number>();
      for (const seq of as) {
        let at = new Set([pos]);
        for (const item of seq) {
          const next = new Set<number>();
          for (const p of at) for (const e of ends(item, p)) next.add(e);
          at = next;
          if (at.size === 0) break;
        }
        for (const p of at) out.add(p);
      }
      return out;
    };
    const ends = (item: Item, pos: number): Set<number> => {
      switch (item.k) {
        case "lit":
          return item.cps.every((c, j) => cps[pos + j] === c) ? new Set([pos + item.cps.length]) : new Set();
        case "class": {
          const c = cps[pos];
          if (c === undefined) return new Set();
          const inside = item.ranges.some(([a, b]) => a <= c && c <= b);
          return inside !== item.negate ? new Set([pos + 1]) : new Set();
        }
        case "ref":
          return rule(item.name, pos);
        case "group":
          return alts(item.alts, pos);
        case "rep": {
          const out = new Set<number>();
          let at = new Set([pos]);
          const seen = new Set<number>();
          for (let n = 0; ; n++) {
            if (n >= item.min) for (const p of at) out.add(p);
            if (n >= item.max || at.size === 0) break;
            const next = new Set<number>();
            for (const p of at) for (const e of ends(item.item, p)) if (n < item.min || !seen.has(e)) next.add(e);
            if (n >= item.min) for (const p of at) seen.add(p);
            at = next;
          }
          return out;
        }
      }
    };
    return rule(root, 0).has(cps.length);
  }
}
