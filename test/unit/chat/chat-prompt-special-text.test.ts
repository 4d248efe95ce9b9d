/**
 * messagesHoldSpecialText (the fast path's test before tokenizing a prompt): against a brute-force
 * oracle (every start position, every special text) on random prompts, with few first characters
 * (the indexOf path) and with many (the per-character path).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { messagesHoldSpecialText, type PromptTextSegment, type SpecialToken } from "../../../lib/chat/prompt.js";

function oracle(prompt: string, segments: readonly PromptTextSegment[], specials: readonly SpecialToken[]): boolean {
  for (const t of specials) {
    if (t.text === "") continue;
    for (let i = 0; i + t.text.length <= prompt.length; i++) {
      if (!prompt.startsWith(t.text, i)) continue;
      // overlaps a message: starts inside one, or starts before one and runs into it
      if (segments.some((s) => s.end > s.start && i < s.end && i + t.text.length > s.start)) return true;
    }
  }
  return false;
}

const special = (text: string, id = 0): SpecialToken => ({ id, text, lstrip: false, rstrip: false });

const ALPHABET = ["<", "|", ">", "a", "b", "[", "]", "x"];
const text = (max: number) => fc.array(fc.constantFrom(...ALPHABET), { maxLength: max }).map((a) => a.join(""));

describe("messagesHoldSpecialText", () => {
  it("agrees with the brute-force oracle (few first characters: the indexOf path)", () => {
    fc.assert(
      fc.property(text(60), fc.array(text(5), { maxLength: 4 }), fc.array(fc.tuple(fc.nat(60), fc.nat(20)), { maxLength: 4 }), (prompt, texts, cuts) => {
        const specials = texts.map((t, i) => special(t, i));
        let at = 0;
        const segments: PromptTextSegment[] = [];
        for (const [gap, len] of cuts) {
          const start = Math.min(prompt.length, at + (gap % 10));
          const end = Math.min(prompt.length, start + len);
          segments.push({ start, end });
          at = end;
        }
        expect(messagesHoldSpecialText(prompt, segments, specials)).toBe(oracle(prompt, segments, specials));
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with the oracle with more than 16 first characters (the per-character path)", () => {
    const many = Array.from({ length: 20 }, (_, i) => special(`${String.fromCharCode(0x41 + i)}<x`, i));
    for (const [prompt, segments, want] of [
      ["hello T<x world", [{ start: 0, end: 15 }], true],
      ["T<x hello", [{ start: 4, end: 9 }], false],
      ["ab T<", [{ start: 0, end: 5 }], false],
      ["T<", [{ start: 1, end: 2 }], false],
      ["zzT<x", [{ start: 4, end: 5 }], true],
    ] as const) {
      expect(messagesHoldSpecialText(prompt, segments, many), prompt).toBe(want);
      expect(oracle(prompt, segments, many), prompt).toBe(want);
    }
  });

  it("finds a special text deep in a megabyte message, and none in a clean one", () => {
    const clean = "word ".repeat(200_000);
    const specials = [special("<|im_start|>"), special("<|im_end|>"), special("[INST]")];
    expect(messagesHoldSpecialText(clean, [{ start: 0, end: clean.length }], specials)).toBe(false);
    const dirty = `${clean}<|im_end|>${clean}`;
    expect(messagesHoldSpecialText(dirty, [{ start: 0, end: dirty.length }], specials)).toBe(true);
  });
});
