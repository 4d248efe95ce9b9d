/**
 * Deterministic automata over code points for the default mode: a regex (regex.ts) becomes a
 * DFA, and DFAs combine exactly where a schema combines string constraints: the keys of
 * `patternProperties` and `propertyNames`, the keys no pattern matches (complement), two patterns
 * at once (intersection), a pattern with `minLength`/`maxLength` (product with a length counter),
 * a finite set of names left out (difference). A DFA is emitted as one GBNF rule per state over
 * the JSON spellings of each character (regex-gbnf.ts's jsonCharSet), so the grammar is
 * deterministic: one parse stack. No reference counterpart (llama.cpp translates patterns as
 * text). Sizes are bounded: a construction past its budget throws UnsupportedPattern.
 */
import { UnsupportedPattern } from "./pattern.js";
import { MAX_CODE_POINT, normalizeRanges, type Ranges, type Regex } from "./regex.js";

export interface Edge {
  /** Disjoint from the other edges of the state. */
  readonly ranges: Ranges;
  readonly to: number;
}

export interface Dfa {
  /** State 0 is the start; a missing character leads nowhere (rejects). */
  readonly edges: ReadonlyArray<readonly Edge[]>;
  readonly accept: readonly boolean[];
}

/** Most NFA states a regex may expand to, and most DFA states a construction may build. */
const MAX_NFA = 20_000;
export const MAX_DFA_STATES = 3_000;
/** A pattern times a length counter (not minimized afterwards: a counter's states are all distinct). */
const MAX_LENGTH_STATES = 6_000;

interface Nfa {
  eps: number[][];
  sets: Array<Array<{ r: Ranges; to: number }>>;
  /** Assertions: `^` (passable before the first character) and `$` (only at the end). */
  starts: number[][];
  ends: number[][];
}

function newState(n: Nfa): number {
  if (n.eps.length >= MAX_NFA) throw new UnsupportedPattern(`the pattern expands to more than ${MAX_NFA} automaton states`);
  n.eps.push([]);
  n.sets.push([]);
  n.starts.push([]);
  n.ends.push([]);
  return n.eps.length - 1;
}

/** Thompson construction: the fragment's start and end states. */
function fragment(re: Regex, n: Nfa): [number, number] {
  switch (re.t) {
    case "set": {
      const s = newState(n);
      const e = newState(n);
      if (re.ranges.length > 0) n.sets[s]!.push({ r: re.ranges, to: e });
      return [s, e];
    }
    case "seq": {
      const s = newState(n);
      let cur = s;
      for (const item of re.items) {
        const [a, b] = fragment(item, n);
        n.eps[cur]!.push(a);
        cur = b;
      }
      return [s, cur];
    }
    case "alt": {
      const s = newState(n);
      const e = newState(n);
      for (const alt of re.alts) {
        const [a, b] = fragment(alt, n);
        n.eps[s]!.push(a);
        n.eps[b]!.push(e);
      }
      return [s, e];
    }
    case "rep": {
      const s = newState(n);
      let cur = s;
      for (let i = 0; i < re.min; i++) {
        const [a, b] = fragment(re.item, n);
        n.eps[cur]!.push(a);
        cur = b;
      }
      const e = newState(n);
      if (re.max === Infinity) {
        const [a, b] = fragment(re.item, n);
        n.eps[cur]!.push(a, e);
        n.eps[b]!.push(a, e);
      } else {
        for (let i = re.min; i < re.max; i++) {
          const [a, b] = fragment(re.item, n);
          n.eps[cur]!.push(a, e);
          cur = b;
        }
        n.eps[cur]!.push(e);
      }
      return [s, e];
    }
    case "start":
    case "end": {
      const s = newState(n);
      const e = newState(n);
      (re.t === "start" ? n.starts : n.ends)[s]!.push(e);
      return [s, e];
    }
  }
}

/**
 * Split the edges' ranges into pieces each edge covers fully or not at all, with the targets of each
 * piece (grouped by their targets, in the order first met going up). A sweep over the ranges' ends:
 * testing every edge against every piece was quadratic, a tenth of a pattern-heavy schema's compile.
 */
function refine(edges: ReadonlyArray<{ r: Ranges; to: number }>): Array<{ ranges: Array<[number, number]>; targets: number[] }> {
  // (point, +1 / -1, target): a range [a, b] opens at a and closes at b + 1
  const events: Array<[number, number, number]> = [];
  for (const e of edges) for (const [a, b] of e.r) events.push([a, 1, e.to], [b + 1, -1, e.to]);
  events.sort((x, y) => x[0] - y[0]);
  const active = new Map<number, number>();
  const byTargets = new Map<string, { ranges: Array<[number, number]>; targets: number[] }>();
  let current: { ranges: Array<[number, number]>; targets: number[] } | undefined;
  for (let i = 0; i < events.length; ) {
    const at = events[i]![0];
    for (; i < events.length && events[i]![0] === at; i++) {
      const [, d, to] = events[i]!;
      const n = (active.get(to) ?? 0) + d;
      if (n === 0) active.delete(to);
      else active.set(to, n);
    }
    if (i === events.length) break;
    const hi = events[i]![0] - 1;
    if (active.size === 0) continue;
    const targets = [...active.keys()].sort((x, y) => x - y);
    const key = targets.join(",");
    current = byTargets.get(key);
    if (current === undefined) byTargets.set(key, (current = { ranges: [], targets }));
    current.ranges.push([at, hi]);
  }
  return [...byTargets.values()].map((g) => ({ ranges: normalizeRanges(g.ranges), targets: g.targets }));
}

/**
 * The DFA of a regex. Anchors are assertions, wherever they stand: `^` passes only before the
 * first character, `$` only at the end (so an unanchored branch, `.*` on both sides, still meets
 * an inner `^`/`$` only where the string starts or ends).
 */
export function regexToDfa(re: Regex): Dfa {
  const n: Nfa = { eps: [], sets: [], starts: [], ends: [] };
  const [start, end] = fragment(re, n);
  // the states reached by empty moves (and `^` / `$` where passable), sorted; a stamp per state
  // marks this call's visits (a Set and a spread array per state visited were most of the time)
  const mark = new Int32Array(n.eps.length);
  let stamp = 0;
  const stack: number[] = [];
  const closure = (states: readonly number[], atStart: boolean, atEnd: boolean): number[] => {
    stamp++;
    const out: number[] = [];
    for (const s of states) {
      if (mark[s] === stamp) continue;
      mark[s] = stamp;
      out.push(s);
      stack.push(s);
    }
    while (stack.length > 0) {
      const s = stack.pop()!;
      for (let k = 0; k < 3; k++) {
        const next = k === 0 ? n.eps[s]! : k === 1 ? (atStart ? n.starts[s]! : null) : atEnd ? n.ends[s]! : null;
        if (next === null) continue;
        for (const t of next) {
          if (mark[t] === stamp) continue;
          mark[t] = stamp;
          out.push(t);
          stack.push(t);
        }
      }
    }
    return out.sort((a, b) => a - b);
  };
  // a label: the states reached, and whether no character was read yet (`^` still passable)
  return determinize<[number[], boolean]>(
    [closure([start], true, false), true],
    ([set, initial]) => closure(set, initial, true).includes(end),
    ([set]) => refine(set.flatMap((s) => n.sets[s]!)).map((g) => ({ ranges: g.ranges, target: [closure(g.targets, false, false), false] as [number[], boolean] })),
  );
}

/** Subset-style construction shared by the builders: states are keyed by a JSON-able label. */
export function determinize<L>(start: L, accepting: (l: L) => boolean, next: (l: L) => Array<{ ranges: Ranges; target: L }>, cap = MAX_DFA_STATES): Dfa {
  const ids = new Map<string, number>();
  const labels: L[] = [];
  const edges: Edge[][] = [];
  const accept: boolean[] = [];
  const id = (l: L): number => {
    const k = JSON.stringify(l);
    let i = ids.get(k);
    if (i === undefined) {
      if (labels.length >= cap) throw new UnsupportedPattern(`the automaton needs more than ${cap} states`);
      i = labels.length;
      ids.set(k, i);
      labels.push(l);
    }
    return i;
  };
  id(start);
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i]!;
    accept[i] = accepting(l);
    edges[i] = next(l).map((e) => ({ ranges: e.ranges, to: id(e.target) }));
  }
  return trim({ edges, accept });
}

/** Only the states that can still reach an accepting one (the rest reject anyway). */
function trim(d: Dfa): Dfa {
  const live = new Set<number>();
  const rev: number[][] = d.edges.map(() => []);
  d.edges.forEach((es, s) => es.forEach((e) => rev[e.to]!.push(s)));
  const work = d.accept.flatMap((a, s) => (a ? [s] : []));
  for (const s of work) live.add(s);
  while (work.length > 0) for (const p of rev[work.pop()!]!) if (!live.has(p)) (live.add(p), work.push(p));
  if (!live.has(0)) return { edges: [[]], accept: [false] };
  // renumber the live states reachable from 0, breadth first (a stable order)
  const order = [0];
  const num = new Map([[0, 0]]);
  for (let i = 0; i < order.length; i++) {
    for (const e of d.edges[order[i]!]!) {
      if (live.has(e.to) && !num.has(e.to)) {
        num.set(e.to, order.length);
        order.push(e.to);
      }
    }
  }
  return {
    edges: order.map((s) => d.edges[s]!.filter((e) => num.has(e.to)).map((e) => ({ ranges: e.ranges, to: num.get(e.to)! }))),
    accept: order.map((s) => d.accept[s]!),
  };
}

/** True when the DFA accepts no string. */
export function isEmpty(d: Dfa): boolean {
  return !d.accept.some((a) => a);
}

/** Pairs of states stepped together; -1 is the dead state (no string from it is accepted). */
function product(a: Dfa, b: Dfa, accept: (x: boolean, y: boolean) => boolean): Dfa {
  return determinize<[number, number]>(
    [0, 0],
    ([x, y]) => accept(x >= 0 && a.accept[x]!, y >= 0 && b.accept[y]!),
    ([x, y]) => {
      // a's targets even, b's odd: refined together, each piece names at most one of each
      const tagged = [...(x < 0 ? [] : a.edges[x]!.map((e) => ({ r: e.ranges, to: e.to * 2 }))), ...(y < 0 ? [] : b.edges[y]!.map((e) => ({ r: e.ranges, to: e.to * 2 + 1 })))];
      return refine(tagged).map((g) => {
        const ta = g.targets.find((t) => t % 2 === 0);
        const tb = g.targets.find((t) => t % 2 === 1);
        return { ranges: g.ranges, target: [ta === undefined ? -1 : ta / 2, tb === undefined ? -1 : (tb - 1) / 2] as [number, number] };
      });
    },
  );
}

export const intersect = (a: Dfa, b: Dfa): Dfa => product(a, b, (x, y) => x && y);
export const union = (a: Dfa, b: Dfa): Dfa => product(a, b, (x, y) => x || y);
export const difference = (a: Dfa, b: Dfa): Dfa => product(a, b, (x, y) => x && !y);

/** Every string of code points. */
export const ANY_STRING: Dfa = { edges: [[{ ranges: [[0, MAX_CODE_POINT]], to: 0 }]], accept: [true] };

/** The strings not accepted by `d`. */
export const complement = (d: Dfa): Dfa => difference(ANY_STRING, d);

/** The DFA of a finite set of strings (a trie, built in one pass over the strings). */
export function stringsDfa(strings: readonly string[]): Dfa {
  const next: Array<Map<number, number>> = [new Map()];
  const accept: boolean[] = [false];
  for (const s of strings) {
    let state = 0;
    for (const c of s) {
      const cp = c.codePointAt(0)!;
      let to = next[state]!.get(cp);
      if (to === undefined) {
        to = next.length;
        next.push(new Map());
        accept.push(false);
        next[state]!.set(cp, to);
      }
      state = to;
    }
    accept[state] = true;
  }
  if (next.length > MAX_DFA_STATES * 4) throw new UnsupportedPattern(`a set of strings needs more than ${MAX_DFA_STATES * 4} states`);
  return { edges: next.map((m) => [...m].sort((a, b) => a[0] - b[0]).map(([cp, to]) => ({ ranges: [[cp, cp]] as Ranges, to }))), accept };
}

/** The strings of `d` whose length in code points is within min..max (max may be Infinity). */
export function withLength(d: Dfa, min: number, max: number): Dfa {
  // count up to max, or up to min and then saturate when there is no maximum
  const cap = max === Infinity ? min : max;
  return determinize<[number, number]>(
    [0, 0],
    ([s, n]) => d.accept[s]! && n >= min,
    ([s, n]) => {
      if (n >= cap && max !== Infinity) return [];
      const m = Math.min(n + 1, cap);
      return d.edges[s]!.map((e) => ({ ranges: e.ranges, target: [e.to, m] as [number, number] }));
    },
    MAX_LENGTH_STATES,
  );
}

/**
 * The smallest DFA with the same language (Moore's partition refinement): fewer states are fewer
 * rules, and equal sub-automata (the tails of two alternatives) become one.
 */
export function minimize(d: Dfa): Dfa {
  // Edges are compared by their ranges as written (two states whose edges split the same
  // characters differently stay apart: still correct, at worst less small), each edge's ranges as
  // one small id, a label.
  // Hopcroft's partition refinement (splitting blocks by the predecessors of a splitter block, the
  // smaller half of a split queued): O(m log n). Moore's rounds cost states x rounds, and a
  // counted pattern (`[a-z]{1,255}`, a chain of 255 states) needs a round per state: 20 ms a
  // minimization. Transitions are partial (a missing edge rejects), so every initial block starts
  // queued (Valmari and Lehtinen), not all but the largest.
  const n = d.edges.length;
  const rangeIds = new Map<string, number>();
  const label = d.edges.map((es) =>
    es.map((e) => {
      const text = e.ranges.map(([a, b]) => `${a}-${b}`).join(",");
      let r = rangeIds.get(text);
      if (r === undefined) rangeIds.set(text, (r = rangeIds.size));
      return r;
    }),
  );
  // predecessors of each state, with the edge's label (compressed rows)
  const invStart = new Int32Array(n + 1);
  for (const es of d.edges) for (const e of es) invStart[e.to + 1]!++;
  for (let t = 0; t < n; t++) invStart[t + 1]! += invStart[t]!;
  const invPred = new Int32Array(invStart[n]!);
  const invLabel = new Int32Array(invStart[n]!);
  const fill = invStart.slice(0, n);
  d.edges.forEach((es, p) =>
    es.forEach((e, k) => {
      const at = fill[e.to]!++;
      invPred[at] = p;
      invLabel[at] = label[p]![k]!;
    }),
  );
  // blocks: elems[first[b] .. end[b]) (marked ones first, up to mid[b]); blockOf, where
  const elems = new Int32Array(n);
  const where = new Int32Array(n);
  const blockOf = new Int32Array(n);
  const first: number[] = [];
  const end: number[] = [];
  const mid: number[] = [];
  const queued: boolean[] = [];
  const queue: number[] = [];
  let k = 0;
  for (const acc of [true, false]) {
    const b = first.length;
    const from = k;
    for (let s = 0; s < n; s++) {
      if (d.accept[s] !== acc) continue;
      elems[k] = s;
      where[s] = k++;
      blockOf[s] = b;
    }
    if (k === from) continue;
    first.push(from);
    end.push(k);
    mid.push(from);
    queued.push(true);
    queue.push(b);
  }
  const byLabel = new Map<number, number[]>();
  while (queue.length > 0) {
    const c = queue.pop()!;
    queued[c] = false;
    byLabel.clear();
    for (let i = first[c]!; i < end[c]!; i++) {
      const t = elems[i]!;
      for (let j = invStart[t]!; j < invStart[t + 1]!; j++) {
        const a = invLabel[j]!;
        let xs = byLabel.get(a);
        if (xs === undefined) byLabel.set(a, (xs = []));
        xs.push(invPred[j]!);
      }
    }
    for (const xs of byLabel.values()) {
      // one edge per label per state: each predecessor is met once here
      const touched: number[] = [];
      for (const p of xs) {
        const b = blockOf[p]!;
        if (mid[b] === first[b]) touched.push(b);
        const at = mid[b]!++;
        const other = elems[at]!;
        elems[at] = p;
        elems[where[p]!] = other;
        where[other] = where[p]!;
        where[p] = at;
      }
      for (const b of touched) {
        if (mid[b] === end[b]) {
          mid[b] = first[b]!;
          continue;
        }
        const nb = first.length;
        first.push(first[b]!);
        end.push(mid[b]!);
        mid.push(first[b]!);
        first[b] = mid[b]!;
        for (let i = first[nb]!; i < end[nb]!; i++) blockOf[elems[i]!] = nb;
        const smaller = end[nb]! - first[nb]! <= end[b]! - first[b]! ? nb : b;
        queued.push(false);
        for (const q of queued[b] ? [nb] : [smaller]) {
          queued[q] = true;
          queue.push(q);
        }
      }
    }
  }
  const cls = Array.from(blockOf);
  // one state per class, edges merged per target class; the start's class first
  const order: number[] = [];
  const num = new Map<number, number>();
  const rep = new Map<number, number>();
  cls.forEach((c, s) => {
    if (!rep.has(c)) rep.set(c, s);
  });
  const visit = (c: number): void => {
    if (num.has(c)) return;
    num.set(c, order.length);
    order.push(c);
  };
  visit(cls[0]!);
  for (let i = 0; i < order.length; i++) for (const e of d.edges[rep.get(order[i]!)!]!) visit(cls[e.to]!);
  return {
    edges: order.map((c) => {
      const byTarget = new Map<number, Array<readonly [number, number]>>();
      for (const e of d.edges[rep.get(c)!]!) {
        const t = num.get(cls[e.to]!)!;
        byTarget.set(t, [...(byTarget.get(t) ?? []), ...e.ranges]);
      }
      return [...byTarget.entries()].map(([to, r]) => ({ ranges: normalizeRanges(r), to }));
    }),
    accept: order.map((c) => d.accept[rep.get(c)!]!),
  };
}

/** Whether the DFA accepts `s`. */
export function accepts(d: Dfa, s: string): boolean {
  let state = 0;
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    const e = d.edges[state]!.find((x) => x.ranges.some(([a, b]) => a <= cp && cp <= b));
    if (e === undefined) return false;
    state = e.to;
  }
  return d.accept[state]!;
}
