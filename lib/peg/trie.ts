/**
 * Code-point trie and Aho-Corasick automaton over delimiters, shaped like the reference's
 * (`common/trie.{h,cpp}`): states are numbered in insertion order and children are visited in
 * ascending code-point order, because GBNF rule names (`until-7-03`) are derived from state numbers.
 */
import { UTF8_INCOMPLETE, UTF8_SUCCESS, codepointsOf, decodeUtf8At, utf8Encode, utf8Stray } from "./utf8.js";

export const TRIE_NO_MATCH = 0;
export const TRIE_PARTIAL_MATCH = 1;
export const TRIE_COMPLETE_MATCH = 2;
export type TrieMatch = typeof TRIE_NO_MATCH | typeof TRIE_PARTIAL_MATCH | typeof TRIE_COMPLETE_MATCH;

export class CodepointTrie {
  /** children[state]: code point -> state */
  readonly children: Array<Map<number, number>> = [new Map()];
  /** pattern index ending at this state, -1 if none */
  readonly pattern: number[] = [-1];
  private patternCount = 0;
  /** first bytes of every delimiter's first code point, for a cheap "cannot start here" test */
  readonly firstBytes = new Uint8Array(256);

  constructor(words: readonly string[] = []) {
    for (const w of words) this.insert(w);
  }

  insert(word: string): number {
    const bytes = utf8Encode(word);
    const cps = codepointsOf(bytes);
    if (cps.length > 0) this.firstBytes[bytes[0]!] = 1;
    let cur = 0;
    for (const cp of cps) {
      let next = this.children[cur]!.get(cp);
      if (next === undefined) {
        next = this.children.length;
        this.children.push(new Map());
        this.pattern.push(-1);
        this.children[cur]!.set(cp, next);
      }
      cur = next;
    }
    if (this.pattern[cur]! < 0) this.pattern[cur] = this.patternCount++;
    return this.pattern[cur]!;
  }

  get size(): number {
    return this.children.length;
  }

  /**
   * Does a delimiter start at `pos`? COMPLETE when one fully matches, PARTIAL when the input ends (or
   * stops being decodable) while still inside a delimiter, NO_MATCH otherwise.
   */
  checkAt(input: Uint8Array, pos: number, tmp: { cp: number; len: number }, lossy = false): TrieMatch {
    let cur = 0;
    const n = input.length;
    while (pos < n) {
      const st = decodeUtf8At(input, pos, tmp);
      if (st !== UTF8_SUCCESS) {
        // lossy reading: a stray byte is U+FFFD (which no delimiter continues with, unless it has one)
        if (!lossy || (st === UTF8_INCOMPLETE && !utf8Stray(input, pos))) break;
        tmp.cp = 0xfffd;
        tmp.len = 1;
      }
      const next = this.children[cur]!.get(tmp.cp);
      if (next === undefined) return TRIE_NO_MATCH;
      cur = next;
      pos += tmp.len;
      if (this.pattern[cur]! >= 0) return TRIE_COMPLETE_MATCH;
    }
    return cur !== 0 ? TRIE_PARTIAL_MATCH : TRIE_NO_MATCH;
  }
}

/** Aho-Corasick automaton over a trie: failure links, longest match per state, sorted alphabet. */
export class AhoCorasick {
  readonly trie: CodepointTrie;
  readonly fail: number[];
  readonly match: number[];
  /** every code point with a transition, ascending */
  readonly alphabet: number[];

  constructor(words: readonly string[]) {
    const t = new CodepointTrie(words);
    this.trie = t;
    const n = t.size;
    this.fail = new Array<number>(n).fill(0);
    const order: number[] = [];
    const queue: number[] = [0];
    for (let qi = 0; qi < queue.length; qi++) {
      const u = queue[qi]!;
      order.push(u);
      for (const [ch, v] of sortedEntries(t.children[u]!)) {
        if (u !== 0) {
          let f = this.fail[u]!;
          while (f !== 0 && !t.children[f]!.has(ch)) f = this.fail[f]!;
          const it = t.children[f]!.get(ch);
          this.fail[v] = it !== undefined && it !== v ? it : 0;
        }
        queue.push(v);
      }
    }
    this.match = new Array<number>(n).fill(-1);
    for (const u of order) {
      this.match[u] = t.pattern[u]! >= 0 ? t.pattern[u]! : u !== 0 ? this.match[this.fail[u]!]! : -1;
    }
    const alpha = new Set<number>();
    for (const m of t.children) for (const ch of m.keys()) alpha.add(ch);
    this.alphabet = [...alpha].sort((a, b) => a - b);
  }

  get numStates(): number {
    return this.trie.size;
  }

  isTerminal(state: number): boolean {
    return this.match[state]! >= 0;
  }

  /** Follows failure links until a transition on `ch` exists. */
  next(state: number, ch: number): number {
    const ch_ = this.trie.children;
    while (state !== 0 && !ch_[state]!.has(ch)) state = this.fail[state]!;
    return ch_[state]!.get(ch) ?? 0;
  }
}

function sortedEntries(m: Map<number, number>): Array<[number, number]> {
  return [...m.entries()].sort((a, b) => a[0] - b[0]);
}
