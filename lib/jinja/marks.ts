/**
 * Input marks: which characters of a string came from message values (content, tool results,
 * tool descriptions...) rather than from the template's own text. A marked string carries sorted,
 * disjoint, non-touching `[start, end)` ranges in UTF-16 code units, flattened into one array.
 * Operations that build strings carry the marks of the characters they copy, so a character that
 * came from input stays marked however the template cuts, joins or escapes it; characters the
 * template adds (its literals, separators, JSON punctuation) are not marked.
 *
 * llama.cpp's engine keeps an `is_input` flag per string part (common/jinja/string.h) that
 * transformations keep only when ALL parts were input; this is per character instead, so that
 * `strip`, `split` and `replace` on a mix keep exactly the input characters marked.
 */

import { spend } from "./limits.js";

/** `[s0, e0, s1, e1, ...]`; absent or empty = nothing marked. */
export type Marks = readonly number[];

export function allMarked(length: number): Marks | undefined {
  return length > 0 ? [0, length] : undefined;
}

/** The marks of `s.slice(start, end)` given the marks of `s` (0 <= start <= end). */
export function sliceMarks(m: Marks | undefined, start: number, end: number): Marks | undefined {
  if (m === undefined || m.length === 0 || end <= start) return undefined;
  const out: number[] = [];
  for (let i = 0; i < m.length; i += 2) {
    const s = Math.max(m[i]!, start);
    const e = Math.min(m[i + 1]!, end);
    if (s < e) out.push(s - start, e - start);
  }
  return out.length > 0 ? out : undefined;
}

/** Whether the character at `index` is marked. */
export function isMarkedAt(m: Marks | undefined, index: number): boolean {
  if (m === undefined) return false;
  for (let i = 0; i < m.length; i += 2) {
    if (index < m[i]!) return false;
    if (index < m[i + 1]!) return true;
  }
  return false;
}

/**
 * The marks of `a + b` given each one's marks (what a MarkedBuilder appending both keeps, and
 * charges, without its parts list): `b`'s shifted by `aLength`, touching runs joined.
 */
export function concatMarks(aLength: number, am: Marks | undefined, bLength: number, bm: Marks | undefined): Marks | undefined {
  const a = aLength > 0 && am !== undefined && am.length > 0 ? am : undefined;
  const b = bLength > 0 && bm !== undefined && bm.length > 0 ? bm : undefined;
  if (a !== undefined) spend(a.length / 2);
  if (b === undefined) return a;
  spend(b.length / 2);
  if (a === undefined && aLength === 0) return b;
  const out = a === undefined ? [] : a.slice();
  for (let i = 0; i < b.length; i += 2) {
    const s0 = b[i]! + aLength;
    const e0 = b[i + 1]! + aLength;
    if (out.length > 0 && out[out.length - 1] === s0) out[out.length - 1] = e0;
    else out.push(s0, e0);
  }
  return out;
}

/**
 * Builds a string from pieces, keeping the marks of each piece. The pieces are joined once at
 * the end (a million `+=` would leave a million-node rope for V8 to flatten).
 */
export class MarkedBuilder {
  private readonly parts: string[] = [];
  private len = 0;
  private marks: number[] | undefined;

  append(s: string, m?: Marks): void {
    if (s.length === 0) return;
    const base = this.len;
    this.parts.push(s);
    this.len += s.length;
    if (m === undefined || m.length === 0) return;
    // each run is a pair of numbers kept until the render ends: charged like collection items
    spend(m.length / 2);
    const out = (this.marks ??= []);
    for (let i = 0; i < m.length; i += 2) {
      const s0 = m[i]! + base;
      const e0 = m[i + 1]! + base;
      if (out.length > 0 && out[out.length - 1] === s0) out[out.length - 1] = e0;
      else out.push(s0, e0);
    }
  }

  /** Appends `s` marked as a whole when `marked`. */
  appendRun(s: string, marked: boolean): void {
    this.append(s, marked ? allMarked(s.length) : undefined);
  }

  /** The text so far. */
  get text(): string {
    const parts = this.parts;
    if (parts.length > 1) {
      const joined = parts.join("");
      parts.length = 1;
      parts[0] = joined;
    }
    return parts[0] ?? "";
  }

  result(): { v: string; m?: Marks } {
    return this.marks !== undefined ? { v: this.text, m: this.marks } : { v: this.text };
  }

  get length(): number {
    return this.len;
  }
}

/** The runs of `s`: alternating unmarked / marked stretches, for functions that escape runs whole. */
export function runs(s: string, m: Marks | undefined): { text: string; marked: boolean }[] {
  if (m === undefined || m.length === 0) return [{ text: s, marked: false }];
  const out: { text: string; marked: boolean }[] = [];
  let at = 0;
  for (let i = 0; i < m.length; i += 2) {
    if (m[i]! > at) out.push({ text: s.slice(at, m[i]!), marked: false });
    out.push({ text: s.slice(m[i]!, m[i + 1]!), marked: true });
    at = m[i + 1]!;
  }
  if (at < s.length) out.push({ text: s.slice(at), marked: false });
  return out;
}
