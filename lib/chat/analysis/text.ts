/**
 * String helpers of the analysis: whitespace trimming and marker segmentation.
 *
 * The analysis works on "byte strings" (one char per UTF-8 byte, see `toBytes`) so that common
 * prefixes and suffixes split rendered text exactly where the reference's `std::string` code
 * splits it, multi-byte characters included. Results are turned back into text at the end.
 */
import { isSpace, trimWhitespace } from "../normalize.js";

/** UTF-8 text -> a string with one char (U+0000..U+00FF) per byte. */
export function toBytes(text: string): string {
  return Buffer.from(text, "utf8").toString("latin1");
}

/** A byte string -> UTF-8 text (a cut multi-byte sequence becomes U+FFFD). */
export function fromBytes(bytes: string): string {
  return Buffer.from(bytes, "latin1").toString("utf8");
}

export function trimLeadingWhitespace(s: string): string {
  let start = 0;
  while (start < s.length && isSpace(s[start])) start++;
  return s.slice(start);
}

export type SegmentType = "text" | "marker";

export interface Segment {
  type: SegmentType;
  value: string;
}

/**
 * Splits text into markers (`<...>` or `[...]`, the opener's own closer ends it) and the text
 * between them. An unclosed marker at the end is text.
 */
export function segmentizeMarkers(text: string): Segment[] {
  const out: Segment[] = [];
  let opener = "";
  let border = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (opener === "" && (c === "<" || c === "[")) {
      if (border < i) out.push({ type: "text", value: text.slice(border, i) });
      border = i;
      opener = c;
    } else if ((opener === "<" && c === ">") || (opener === "[" && c === "]")) {
      out.push({ type: "marker", value: text.slice(border, i + 1) });
      border = i + 1;
      opener = "";
    }
  }
  if (border < text.length) out.push({ type: "text", value: text.slice(border) });
  return out;
}

/** Drops segments that are only whitespace. */
export function pruneWhitespaceSegments(segments: readonly Segment[]): Segment[] {
  return segments.filter((s) => trimWhitespace(s.value) !== "");
}
