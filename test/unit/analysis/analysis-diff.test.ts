import { describe, expect, it } from "vitest";

import { afterCommonSuffix, calculateDiffSplit, untilCommonPrefix } from "../../../lib/chat/analysis/diff-split.js";
import {
  any,
  choice,
  end,
  lit,
  marker,
  not,
  opt,
  parseAndExtract,
  parseAnywhereAndExtract,
  rest,
  seq,
  space,
  star,
  tag,
  until,
  untilOneOf,
} from "../../../lib/chat/analysis/pattern.js";
import {
  fromBytes,
  pruneWhitespaceSegments,
  segmentizeMarkers,
  toBytes,
  trimLeadingWhitespace,
} from "../../../lib/chat/analysis/text.js";
import { trimTrailingSpace as trimTrailingWhitespace, trimWhitespace } from "../../../lib/chat/normalize.js";

describe("segmentizeMarkers", () => {
  it("splits markers and text, each opener closed by its own closer", () => {
    expect(segmentizeMarkers("<|tool_call|>[args]{ are here }[/args]<|end|>")).toEqual([
      { type: "marker", value: "<|tool_call|>" },
      { type: "marker", value: "[args]" },
      { type: "text", value: "{ are here }" },
      { type: "marker", value: "[/args]" },
      { type: "marker", value: "<|end|>" },
    ]);
    // a `]` does not close a `<` marker
    expect(segmentizeMarkers("a<b]c>d")).toEqual([
      { type: "text", value: "a" },
      { type: "marker", value: "<b]c>" },
      { type: "text", value: "d" },
    ]);
  });

  it("keeps an unclosed marker as text and prunes whitespace-only segments", () => {
    expect(segmentizeMarkers("x <open")).toEqual([
      { type: "text", value: "x " },
      { type: "text", value: "<open" },
    ]);
    const segs = segmentizeMarkers("<a>\n<b>  \n </b>\n");
    expect(pruneWhitespaceSegments(segs).map((s) => s.value)).toEqual(["<a>", "<b>", "</b>"]);
  });
});

describe("trim helpers", () => {
  it("trims C whitespace only", () => {
    expect(trimWhitespace(" \t\n\v\f\rx y\r\n")).toBe("x y");
    expect(trimLeadingWhitespace("\n x \n")).toBe("x \n");
    expect(trimTrailingWhitespace("\n x \n")).toBe("\n x");
    expect(trimWhitespace("\u00a0x")).toBe("\u00a0x");
  });

  it("round-trips UTF-8 through byte strings", () => {
    const s = "<｜tool▁sep｜>é";
    expect(toBytes(s).length).toBe(Buffer.byteLength(s));
    expect(fromBytes(toBytes(s))).toBe(s);
  });
});

describe("calculateDiffSplit", () => {
  it("aligns prefix and suffix to whole markers", () => {
    expect(calculateDiffSplit("<html><body><div></div></body></html>", "<html><body><p>Something</p></body></html>")).toEqual({
      prefix: "<html><body>",
      suffix: "</body></html>",
      left: "<div></div>",
      right: "<p>Something</p>",
    });
  });

  it("refines character by character inside differing text", () => {
    expect(calculateDiffSplit("<a>hello world</a>", "<a>hello there</a>")).toEqual({
      prefix: "<a>hello ",
      suffix: "</a>",
      left: "world",
      right: "there",
    });
  });

  it("gives the whole text as prefix when nothing differs", () => {
    expect(calculateDiffSplit("<a>x</a>", "<a>x</a>")).toEqual({ prefix: "<a>x</a>", suffix: "", left: "", right: "" });
  });

  it("splits exactly at the end of a left side that starts the right side", () => {
    // shared trailing "\n" segments must not rotate the split
    expect(calculateDiffSplit("<s>user\n", "<s>user\n<t>gen\n")).toEqual({
      prefix: "<s>user\n",
      suffix: "",
      left: "",
      right: "<t>gen\n",
    });
  });

  it("handles empty sides", () => {
    expect(calculateDiffSplit("", "<x>")).toEqual({ prefix: "", suffix: "", left: "", right: "<x>" });
    expect(calculateDiffSplit("<x>", "")).toEqual({ prefix: "", suffix: "", left: "<x>", right: "" });
  });

  it("always reassembles both inputs", () => {
    const pairs: [string, string][] = [
      ["<a><b>1</b></a>", "<a><c>2</c><b>1</b></a>"],
      ["[T]x[/T]", "[T]y[/T][T]z[/T]"],
      ["plain text one", "plain text two"],
      ["<u>hi</u><v>", "<u>hi</u>"],
    ];
    for (const [l, r] of pairs) {
      const d = calculateDiffSplit(l, r);
      expect(d.prefix + d.left + d.suffix).toBe(l);
      expect(d.prefix + d.right + d.suffix).toBe(r);
    }
  });
});

describe("untilCommonPrefix / afterCommonSuffix", () => {
  it("finds what precedes the shared start", () => {
    expect(untilCommonPrefix("really want a FUNCTION call", "FUNCTION alpha", "FUNCTION beta")).toBe("really want a ");
    expect(untilCommonPrefix("<tool_call>", "<something>", "<something_else>")).toBe("");
    expect(untilCommonPrefix("some text", "1234", "abcd")).toBe("");
  });

  it("finds what follows the last shared end", () => {
    expect(afterCommonSuffix("really want a FUNCTION call", "first FUNCTION", "second FUNCTION")).toBe(" call");
    // the LAST occurrence of the shared end counts
    expect(afterCommonSuffix("x-args one x-args two", "ax-args", "bx-args")).toBe(" two");
    // the whole shared end must occur ("a-args" here), not just a part of it
    expect(afterCommonSuffix("two-args three", "alpha-args", "beta-args")).toBe("");
    expect(afterCommonSuffix("abc", "x1", "y2")).toBe("");
  });
});

describe("pattern matcher", () => {
  it("matches markers of both bracket kinds", () => {
    expect(parseAndExtract(tag("m", marker), "<|im_end|>rest").get("m")).toBe("<|im_end|>");
    expect(parseAndExtract(tag("m", marker), "[INST]x").get("m")).toBe("[INST]");
    expect(parseAndExtract(marker, "<never closed").ok).toBe(false);
  });

  it("uses ordered choice and greedy repetition without backtracking", () => {
    expect(parseAndExtract(seq(star(lit("a")), lit("a")), "aaa").ok).toBe(false);
    expect(parseAndExtract(tag("c", choice("ab", "a")), "abc").get("c")).toBe("ab");
    expect(parseAndExtract(seq(opt(lit("x")), tag("r", rest)), "yz").get("r")).toBe("yz");
  });

  it("stops `until` before a delimiter, or a delimiter prefix at the end of input", () => {
    expect(parseAndExtract(tag("u", until("END")), "abcENDx").get("u")).toBe("abc");
    expect(parseAndExtract(tag("u", until("END")), "abcEN").get("u")).toBe("abc");
    expect(parseAndExtract(tag("u", untilOneOf([">", "Q"])), "xyQ>").get("u")).toBe("xy");
    expect(parseAndExtract(tag("u", until("zz")), "no delimiter").get("u")).toBe("no delimiter");
  });

  it("finds the first position where a pattern matches and drops tags of failed branches", () => {
    const p = seq(tag("pre", seq(marker, space)), lit("NEEDLE"), space, tag("post", marker));
    const r = parseAnywhereAndExtract(p, "text <a> NEEDLE <b> more");
    expect(r.ok).toBe(true);
    expect(r.tags).toEqual({ pre: "<a> ", post: "<b>" });
    const failed = parseAnywhereAndExtract(choice(seq(tag("t", "a"), "X"), "b"), "ab");
    expect(failed.tags).toEqual({});
  });

  it("reads `not`, `any` and `end` as PEG does", () => {
    const nonMarker = star(seq(not(marker), any));
    expect(parseAndExtract(seq(tag("t", nonMarker), marker, end), "abc<d>").get("t")).toBe("abc");
    expect(parseAndExtract(seq(lit("a"), end), "ab").ok).toBe(false);
    expect(parseAnywhereAndExtract(lit("q"), "").ok).toBe(false);
  });
});
