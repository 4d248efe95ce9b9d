/**
 * Incremental decoding of growing byte ranges (`RangeTexts`) and segment-wise field comparison
 * (`compareFields`): the same texts and the same prefix relations as decoding and comparing whole.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeJsonStringInner, trimTrailingSpace } from "../../../lib/chat/normalize.js";
import {
  CHANGED,
  Field,
  GREW,
  RangeTexts,
  SAME,
  SHRANK,
  TF_JSON_ESCAPE,
  TF_PLAIN,
  TF_TRIM_END,
  type Transform,
  compareFields,
  completeUtf8Prefix,
  literalPiece,
} from "../../../lib/chat/text-fields.js";

const decoder = new TextDecoder("utf-8");
const encoder = new TextEncoder();

/** What a one-shot mapping reads for `[start, end)` of `bytes`. */
function fresh(bytes: Uint8Array, start: number, end: number, partial: boolean, tf: Transform): string {
  if (partial && end === bytes.length) end = Math.max(start, completeUtf8Prefix(bytes, end));
  const raw = end > start ? decoder.decode(bytes.subarray(start, end)) : "";
  return tf === TF_TRIM_END ? trimTrailingSpace(raw) : tf === TF_JSON_ESCAPE ? escapeJsonStringInner(raw) : raw;
}

/** Bytes mixing ASCII, whitespace, quotes, multi-byte characters, BOMs and stray bytes. */
const messyBytes = fc
  .array(
    fc.oneof(
      fc.constantFrom("a", " ", "\n", "\t", '"', "\\", "é", "日", "😀", "\ufeff", "\u000b"),
      fc.constantFrom([0x80], [0xff], [0xe2, 0x82], [0xf0, 0x9f], [0xc3], [0xed, 0xa0, 0x80]),
    ),
    { maxLength: 40 },
  )
  .map((xs) => Uint8Array.from(xs.flatMap((x) => (typeof x === "string" ? [...encoder.encode(x)] : x))));

describe("RangeTexts", () => {
  it("reads of a range as the input grows equal fresh decodes, under every transform", () => {
    fc.assert(
      fc.property(messyBytes, fc.nat(6), fc.array(fc.nat(), { minLength: 1, maxLength: 12 }), fc.constantFrom<Transform>(TF_PLAIN, TF_TRIM_END, TF_JSON_ESCAPE), fc.boolean(), (bytes, start0, cuts, tf, shrink) => {
        const start = Math.min(start0, bytes.length);
        const ranges = new RangeTexts();
        let len = start;
        for (const c of cuts) {
          // the input grows; the range's end is the input end or a bit before it, sometimes back
          len = Math.min(bytes.length, Math.max(len, start + (c % (bytes.length - start + 1))));
          const input = bytes.subarray(0, len);
          const end = shrink && c % 3 === 0 ? Math.max(start, len - (c % 4)) : len;
          const partial = c % 5 !== 0;
          expect(ranges.read(input, start, end, partial, tf).text).toBe(fresh(input, start, end, partial, tf));
          if (c % 2 === 0) ranges.endFrame();
        }
      }),
      { numRuns: 500 },
    );
  });

  it("a read that grew reports exactly the appended text", () => {
    const bytes = encoder.encode("héllo wörld  \n 日本");
    const ranges = new RangeTexts();
    const a = ranges.read(bytes.subarray(0, 4), 0, 4, true, TF_TRIM_END);
    const b = ranges.read(bytes.subarray(0, 14), 0, 14, true, TF_TRIM_END);
    expect(b.seg!.range).toBe(a.seg!.range);
    expect(b.seg!.version).toBe(a.seg!.version + 1);
    expect(a.text + b.seg!.range!.ext).toBe(b.text);
  });
});

type Op = ["lit", string] | ["range", number] | ["set", string] | ["clear"];

describe("compareFields", () => {
  it("agrees with comparing the texts, for fields built from a shared start", () => {
    const op = fc.oneof(
      fc.constantFrom<Op>(["lit", "{"], ["lit", '"a":'], ["lit", '"'], ["lit", "x"], ["clear"], ["set", "{"], ["set", ""]),
      fc.nat(30).map((n): Op => ["range", n]),
    );
    fc.assert(
      fc.property(messyBytes, fc.array(op, { maxLength: 6 }), fc.array(op, { maxLength: 4 }), fc.array(op, { maxLength: 4 }), (bytes, common, opsA, opsB) => {
        const ranges = new RangeTexts();
        let grown = 1;
        const apply = (f: Field, o: Op): void => {
          if (o[0] === "lit") f.append(literalPiece(o[1], true));
          else if (o[0] === "set") f.set(literalPiece(o[1], true));
          else if (o[0] === "clear") f.clear();
          else {
            // a range that starts at byte 0 and grows with every read (as an open node does)
            grown = Math.min(bytes.length, grown + o[1]);
            const input = bytes.subarray(0, grown);
            f.append(ranges.read(input, 0, grown, true, TF_PLAIN));
          }
        };
        const base = new Field(true);
        for (const o of common) apply(base, o);
        const frozen = base.freezeAt(7);
        const a = frozen.clone();
        for (const o of opsA) apply(a, o);
        const b = frozen.clone();
        for (const o of opsB) apply(b, o);
        const c = compareFields(a.view(), b.view());
        const p = a.str;
        const n = b.str;
        const want = p === n ? SAME : n.startsWith(p) ? GREW : p.startsWith(n) ? SHRANK : CHANGED;
        expect(c.status).toBe(want);
        if (want === GREW) expect(c.delta).toBe(n.slice(p.length));
      }),
      { numRuns: 800 },
    );
  });
});
