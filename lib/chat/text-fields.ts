/**
 * Message fields that know how they were built, so two streamed frames compare in time proportional
 * to what changed, not to the length of the message.
 *
 * A `Field` is the text of one message field (content, reasoning, a call's arguments) plus, when
 * tracked, the segments appended since its `base` (a frozen prefix shared by both frames, named by a
 * number). A segment is either literal text or the decoded text of an input byte range `[start, ..)`
 * read through a `RangeTexts` cache: the cache decodes only the bytes a range gained since the last
 * read and records, per version, what was appended. Comparing two fields then walks their segment
 * lists: equal segments are skipped by identity, a range that grew contributes exactly its new text.
 * Nothing here looks into a long string (V8 would flatten a concatenated one to read it).
 */
import { escapeJsonStringInner, trimTrailingSpace } from "./normalize.js";

/** How a node's decoded text enters a field. */
export const TF_PLAIN = 0;
/** Trailing C whitespace removed (`trimTrailingSpace`). */
export const TF_TRIM_END = 1;
/** JSON-escaped, without quotes (`escapeJsonStringInner`). */
export const TF_JSON_ESCAPE = 2;
export type Transform = typeof TF_PLAIN | typeof TF_TRIM_END | typeof TF_JSON_ESCAPE;

/** One piece of a field: literal text (`range` null) or version `version` of a range's text. */
export interface Seg {
  readonly text: string;
  readonly range: RangeText | null;
  readonly version: number;
}

/** Text about to go into a field: the string and, when tracked, its segment. */
export interface Piece {
  readonly text: string;
  readonly seg: Seg | null;
  /** first UTF-16 code unit, -1 when empty */
  readonly first: number;
  /** has a character other than space, \n, \r, \t (what makes reasoning non-blank) */
  readonly nonBlank: boolean;
}

function hasNonBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return true;
  }
  return false;
}

function isCSpaceCode(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

/** A literal piece (short text: separators, quotes, names). */
export function literalPiece(text: string, tracked: boolean): Piece {
  return { text, seg: tracked ? { text, range: null, version: 0 } : null, first: text.length > 0 ? text.charCodeAt(0) : -1, nonBlank: tracked && hasNonBlank(text) };
}

export class Field {
  str = "";
  /** what the segments extend: 0 = the empty string, else a frozen prefix (see `freezeAt`) */
  base = 0;
  /** segments since `base`; null when not tracked (a one-shot mapping) */
  segs: Seg[] | null;
  /** tracked only: `str` has a character other than space, \n, \r, \t */
  nonBlank = false;
  /** bumped when the text is replaced (set, copy, clear) */
  private gen = 0;
  // where the view for the next frame starts: the last checkpoint (see `freezeAt`)
  private cpBase = 0;
  private cpIndex = 0;
  private cpGen = 0;

  constructor(tracked: boolean) {
    this.segs = tracked ? [] : null;
  }

  append(p: Piece): void {
    if (p.text.length === 0) return;
    this.str += p.text;
    if (this.segs !== null) {
      this.segs.push(p.seg!);
      if (p.nonBlank) this.nonBlank = true;
    }
  }

  /** Replaces the text. */
  set(p: Piece): void {
    this.str = p.text;
    this.base = 0;
    this.gen++;
    if (this.segs !== null) {
      this.segs = p.text.length > 0 ? [p.seg!] : [];
      this.nonBlank = p.nonBlank;
    }
  }

  /** Replaces the text with another field's. */
  copy(other: Field): void {
    this.str = other.str;
    this.base = other.base;
    this.gen++;
    if (this.segs !== null) {
      this.segs = other.segs!.slice();
      this.nonBlank = other.nonBlank;
    }
  }

  clear(): void {
    this.str = "";
    this.base = 0;
    this.gen++;
    if (this.segs !== null) this.segs = [];
    this.nonBlank = false;
  }

  /** Tracked fields: whether something was appended since the base. */
  get hasSegments(): boolean {
    return this.segs!.length > 0;
  }

  /**
   * A checkpoint: returns this field's text as a frozen field (base `id`, no segments; the same base
   * when nothing was appended) and remembers the point, so `viewForNext` starts there.
   */
  freezeAt(id: number): Field {
    const segs = this.segs!;
    const base = segs.length === 0 ? this.base : id;
    this.cpBase = base;
    this.cpIndex = segs.length;
    this.cpGen = this.gen;
    const f = new Field(true);
    f.str = this.str;
    f.base = base;
    f.cpBase = base;
    f.nonBlank = this.nonBlank;
    return f;
  }

  /** A working copy of a frozen field (appends do not touch the original). */
  clone(): Field {
    const f = new Field(true);
    f.str = this.str;
    f.base = this.base;
    f.cpBase = this.base;
    f.segs = this.segs!.slice();
    f.cpIndex = f.segs.length;
    f.nonBlank = this.nonBlank;
    return f;
  }

  /** Tracked fields: the field relative to where this frame started. */
  view(): FieldView {
    return { str: this.str, base: this.base, segs: this.segs! };
  }

  /** Tracked fields: the field relative to the last `freezeAt` (what the next frame will start from). */
  viewForNext(): FieldView {
    if (this.gen !== this.cpGen) return this.view();
    const segs = this.segs!;
    return { str: this.str, base: this.cpBase, segs: this.cpIndex === 0 ? segs : segs.slice(this.cpIndex) };
  }
}

/** What one field looked like in a frame: enough to compare it with the next frame's. */
export interface FieldView {
  readonly str: string;
  readonly base: number;
  readonly segs: readonly Seg[];
}

export const SAME = 0;
/** the next text extends the previous one by `delta` */
export const GREW = 1;
/** the next text is a proper prefix of the previous one */
export const SHRANK = 2;
/** neither is a prefix of the other */
export const CHANGED = 3;
export type FieldStatus = typeof SAME | typeof GREW | typeof SHRANK | typeof CHANGED;

export interface FieldChange {
  status: FieldStatus;
  /** with GREW: the text appended */
  delta: string;
}

const SAME_CHANGE: FieldChange = { status: SAME, delta: "" };

function byText(prev: string, next: string): FieldChange {
  if (prev === next) return SAME_CHANGE;
  if (next.length > prev.length && next.startsWith(prev)) return { status: GREW, delta: next.slice(prev.length) };
  if (prev.length > next.length && prev.startsWith(next)) return { status: SHRANK, delta: "" };
  return { status: CHANGED, delta: "" };
}

function joinTexts(segs: readonly Seg[], from: number): string {
  let s = "";
  for (let i = from; i < segs.length; i++) s += segs[i]!.text;
  return s;
}

function sameSeg(a: Seg, b: Seg): boolean {
  if (a === b) return true;
  if (a.range !== null || b.range !== null) return a.range === b.range && a.version === b.version;
  return a.text === b.text;
}

/**
 * How `next` relates to `prev` (the same field in two frames). Cost: the segment lists, plus the text
 * of segments that neither match nor grew (rare: a frame that re-read the output differently).
 */
export function compareFields(prev: FieldView, next: FieldView): FieldChange {
  if (prev.str === next.str && prev.str.length === 0) return SAME_CHANGE;
  if (prev.base !== next.base) {
    // different starting points (a re-mapped frame): compare the texts, cheaply when one is empty
    if (prev.str.length === 0) return { status: GREW, delta: next.str };
    if (next.str.length === 0) return { status: SHRANK, delta: "" };
    return byText(prev.str, next.str);
  }
  const p = prev.segs;
  const n = next.segs;
  if (p === n) return SAME_CHANGE;
  let i = 0;
  const common = Math.min(p.length, n.length);
  while (i < common && sameSeg(p[i]!, n[i]!)) i++;
  if (i === p.length) return i === n.length ? SAME_CHANGE : grewBy(joinTexts(n, i));
  if (i === n.length) return byText(joinTexts(p, i), "");
  const a = p[i]!;
  const b = n[i]!;
  const r = a.range;
  if (r !== null && r === b.range && i === p.length - 1 && a.version + 1 === b.version && b.version === r.version) {
    // the open range grew by the text of its last read
    return grewBy(r.ext + joinTexts(n, i + 1));
  }
  return byText(joinTexts(p, i), joinTexts(n, i));
}

function grewBy(delta: string): FieldChange {
  return delta.length === 0 ? SAME_CHANGE : { status: GREW, delta };
}

// The first read of a range decodes as a one-shot decode does (a leading BOM dropped); a continuation
// must keep one that appears mid-text.
const firstDecoder = new TextDecoder("utf-8");
const restDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Length of `bytes[0, end)` without a UTF-8 sequence cut short by `end` (how partial input is decoded). */
export function completeUtf8Prefix(bytes: Uint8Array, end: number): number {
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const b = bytes[end - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? end - back : end;
  }
  return end;
}

/** Decodes bytes [start, end); on partial input a character cut by the end of the input is left out. */
export function decodeRange(bytes: Uint8Array, start: number, end: number, partial: boolean): string {
  if (partial && end === bytes.length) end = Math.max(start, completeUtf8Prefix(bytes, end));
  return end > start ? firstDecoder.decode(bytes.subarray(start, end)) : "";
}

/** Whether a decoder that started at `start` is between characters at `end` (nothing pending). */
function cleanEnd(bytes: Uint8Array, start: number, end: number): boolean {
  for (let back = 1; back <= 3 && end - back >= start; back++) {
    const b = bytes[end - back]!;
    if ((b & 0xc0) === 0x80) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need <= back;
  }
  return true;
}

/** The text of one input range `[start, ..)` under one transform, extended as the range grows. */
export class RangeText {
  readonly start: number;
  readonly tf: Transform;
  /** bytes decoded: `[start, to)` */
  to: number;
  /** a decoder is between characters at `to`, so decoding more bytes from there appends */
  clean: boolean;
  text = "";
  /** bumped by every change of `text` */
  version = 0;
  /** what the last extension appended to `text` */
  ext = "";
  first = -1;
  nonBlank = false;
  /** TF_TRIM_END: trailing whitespace held back from `text` */
  ws = "";

  constructor(start: number, tf: Transform) {
    this.start = start;
    this.tf = tf;
    this.to = start;
    this.clean = true;
  }

  fill(bytes: Uint8Array, to: number): void {
    const raw = to > this.start ? firstDecoder.decode(bytes.subarray(this.start, to)) : "";
    this.to = to;
    this.clean = cleanEnd(bytes, this.start, to);
    if (this.tf === TF_TRIM_END) {
      const body = trimTrailingSpace(raw);
      this.ws = raw.slice(body.length);
      this.text = body;
    } else {
      this.text = this.tf === TF_JSON_ESCAPE ? escapeJsonStringInner(raw) : raw;
    }
    this.first = this.text.length > 0 ? this.text.charCodeAt(0) : -1;
    this.nonBlank = hasNonBlank(this.text);
    this.ext = "";
  }

  extend(bytes: Uint8Array, to: number): void {
    // nothing decoded yet: this is the first decode of the range (a leading BOM is dropped)
    const raw = (this.to === this.start ? firstDecoder : restDecoder).decode(bytes.subarray(this.to, to));
    this.to = to;
    this.clean = cleanEnd(bytes, this.start, to);
    let add: string;
    if (this.tf === TF_TRIM_END) {
      let j = raw.length;
      while (j > 0 && isCSpaceCode(raw.charCodeAt(j - 1))) j--;
      if (j === 0) {
        this.ws += raw;
        add = "";
      } else {
        add = this.ws + raw.slice(0, j);
        this.ws = raw.slice(j);
      }
    } else {
      add = this.tf === TF_JSON_ESCAPE ? escapeJsonStringInner(raw) : raw;
    }
    if (add.length === 0) return;
    if (this.first === -1) this.first = add.charCodeAt(0);
    if (!this.nonBlank && hasNonBlank(add)) this.nonBlank = true;
    this.text += add;
    this.ext = add;
    this.version++;
  }

  piece(): Piece {
    return { text: this.text, seg: { text: this.text, range: this, version: this.version }, first: this.first, nonBlank: this.nonBlank };
  }
}

/**
 * The ranges read in the last two frames, keyed by start and transform. Older ones are dropped, so
 * memory follows what the frames read, not the output length.
 */
export class RangeTexts {
  private cur = new Map<number, RangeText>();
  private old = new Map<number, RangeText>();

  /**
   * The text of `[start, end)` under `tf`; on partial input a character cut by the end of the input
   * is left out (as a one-shot mapping does).
   */
  read(bytes: Uint8Array, start: number, end: number, partial: boolean, tf: Transform): Piece {
    let to = end;
    if (partial && end === bytes.length) to = Math.max(start, completeUtf8Prefix(bytes, end));
    const key = start * 4 + tf;
    let r = this.cur.get(key);
    if (r === undefined) {
      r = this.old.get(key);
      if (r !== undefined) this.cur.set(key, r);
    }
    if (r === undefined) {
      r = new RangeText(start, tf);
      r.fill(bytes, to);
      this.cur.set(key, r);
    } else if (to !== r.to) {
      if (r.clean && to > r.to) r.extend(bytes, to);
      else {
        // shrank, or grew from a point inside a character: a new range (older segments keep theirs)
        r = new RangeText(start, tf);
        r.fill(bytes, to);
        this.cur.set(key, r);
      }
    }
    return r.piece();
  }

  /** Ends a frame: ranges not read in this frame or the previous one are forgotten. */
  endFrame(): void {
    const old = this.old;
    old.clear();
    this.old = this.cur;
    this.cur = old;
  }
}
