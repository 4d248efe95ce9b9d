/**
 * A tiny PEG matcher for the analysis probes. The reference locates markers in rendered probe
 * output with small throw-away PEG parsers (`build_tagged_peg_parser` +
 * `parse_and_extract` / `parse_anywhere_and_extract`); these combinators have the same semantics
 * (ordered choice, greedy repetition without backtracking, `until` stopping at a delimiter or at a
 * delimiter prefix that runs into the end of the input) so the same patterns find the same text.
 * It works on JS string offsets; the probe texts are plain ASCII around the needles.
 */
import { isSpace } from "../normalize.js";

/** One tagged span found by a successful match. */
interface TagSpan {
  name: string;
  start: number;
  end: number;
}

interface Match {
  end: number;
  tags: TagSpan[];
}

/** A pattern tries to match at `pos` and returns where it ended, or null. */
export type Pattern = (input: string, pos: number) => Match | null;

const NO_TAGS: TagSpan[] = [];

/** `"text"` */
export function lit(text: string): Pattern {
  return (input, pos) => (input.startsWith(text, pos) ? { end: pos + text.length, tags: NO_TAGS } : null);
}

/** `A B ...` (a plain string operand is a literal) */
export function seq(...parts: (Pattern | string)[]): Pattern {
  const ps = parts.map(toPattern);
  return (input, pos) => {
    let tags: TagSpan[] = NO_TAGS;
    let at = pos;
    for (const p of ps) {
      const m = p(input, at);
      if (m === null) return null;
      if (m.tags.length > 0) tags = tags.length === 0 ? m.tags : tags.concat(m.tags);
      at = m.end;
    }
    return { end: at, tags };
  };
}

/** `A | B | ...` — the first alternative that matches wins. */
export function choice(...alts: (Pattern | string)[]): Pattern {
  const ps = alts.map(toPattern);
  return (input, pos) => {
    for (const p of ps) {
      const m = p(input, pos);
      if (m !== null) return m;
    }
    return null;
  };
}

/** `A*` — greedy, never gives back. */
export function star(p: Pattern): Pattern {
  return (input, pos) => {
    let tags: TagSpan[] = NO_TAGS;
    let at = pos;
    for (;;) {
      const m = p(input, at);
      if (m === null || m.end === at) break;
      if (m.tags.length > 0) tags = tags.concat(m.tags);
      at = m.end;
    }
    return { end: at, tags };
  };
}

/** `A?` */
export function opt(p: Pattern): Pattern {
  return (input, pos) => p(input, pos) ?? { end: pos, tags: NO_TAGS };
}

/** `!A` — consumes nothing. */
export function not(p: Pattern | string): Pattern {
  const q = toPattern(p);
  return (input, pos) => (q(input, pos) === null ? { end: pos, tags: NO_TAGS } : null);
}

/** `.` — one character (a surrogate pair counts as one). */
export const any: Pattern = (input, pos) => {
  if (pos >= input.length) return null;
  const cp = input.codePointAt(pos)!;
  return { end: pos + (cp > 0xffff ? 2 : 1), tags: NO_TAGS };
};

/** `[ \t\n\v\f\r]*` */
export const space: Pattern = (input, pos) => {
  let at = pos;
  while (at < input.length && isSpace(input[at])) at++;
  return { end: at, tags: NO_TAGS };
};

/** `$` */
export const end: Pattern = (input, pos) => (pos === input.length ? { end: pos, tags: NO_TAGS } : null);

/** `.*` */
export const rest: Pattern = (input) => ({ end: input.length, tags: NO_TAGS });

/**
 * Everything up to the first delimiter. Like the reference's trie-based `until`, it also stops
 * before a delimiter prefix that runs into the end of the input.
 */
export function untilOneOf(delimiters: readonly string[]): Pattern {
  const ds = delimiters.filter((d) => d.length > 0);
  return (input, pos) => {
    let at = pos;
    while (at < input.length) {
      for (const d of ds) {
        const room = input.length - at;
        if (room >= d.length ? input.startsWith(d, at) : d.startsWith(input.slice(at))) {
          return { end: at, tags: NO_TAGS };
        }
      }
      at += input.codePointAt(at)! > 0xffff ? 2 : 1;
    }
    return { end: at, tags: NO_TAGS };
  };
}

/** `(!d .)*` */
export function until(delimiter: string): Pattern {
  return untilOneOf([delimiter]);
}

/** `<...>` or `[...]`: the reference's `marker()`. */
export const marker: Pattern = choice(seq("<", until(">"), ">"), seq("[", until("]"), "]"));

/** Records the text `p` matched under `name` (outer tags before inner ones, as the AST visit). */
export function tag(name: string, p: Pattern | string): Pattern {
  const q = toPattern(p);
  return (input, pos) => {
    const m = q(input, pos);
    if (m === null) return null;
    return { end: m.end, tags: [{ name, start: pos, end: m.end }, ...m.tags] };
  };
}

function toPattern(p: Pattern | string): Pattern {
  return typeof p === "string" ? lit(p) : p;
}

/** What a tagged parse yields: success and, by tag name, the text of the last span with that tag. */
export interface TaggedResult {
  ok: boolean;
  tags: Record<string, string>;
  /** A tag's text, "" when the tag did not match. */
  get(name: string): string;
}

function toResult(input: string, m: Match | null): TaggedResult {
  const tags: Record<string, string> = {};
  if (m !== null) for (const t of m.tags) tags[t.name] = input.slice(t.start, t.end);
  return { ok: m !== null, tags, get: (name) => tags[name] ?? "" };
}

/** Matches at the start of `input` (need not consume all of it). */
export function parseAndExtract(p: Pattern, input: string): TaggedResult {
  return toResult(input, p(input, 0));
}

/** Matches at the first position where `p` succeeds. */
export function parseAnywhereAndExtract(p: Pattern, input: string): TaggedResult {
  if (input.length === 0) return parseAndExtract(p, input);
  for (let i = 0; i < input.length; i++) {
    const m = p(input, i);
    if (m !== null) return toResult(input, m);
  }
  return toResult(input, null);
}
