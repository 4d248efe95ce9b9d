import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChatInput } from "../../../lib/chat/input.js";

describe("ChatInput", () => {
  it("puts the token on the first byte of its piece and null on the rest", () => {
    const input = new ChatInput();
    input.append("ab", 7);
    input.append("c");
    input.append("é", 9); // two bytes
    input.append("", 5); // empty: nothing recorded
    expect(input.length).toBe(5);
    expect(input.tokens()).toEqual([7, null, null, 9, null]);
    expect(input.text).toBe("abcé");
    expect(input.tokenCovering(4)).toBe(9);
    expect(input.tokenCovering(2)).toBe(7);
  });

  it("accepts pieces that split a UTF-8 character", () => {
    const bytes = new TextEncoder().encode("日本😀");
    const input = new ChatInput();
    for (let i = 0; i < bytes.length; i++) input.append(bytes.subarray(i, i + 1), i);
    expect(input.text).toBe("日本😀");
    expect(input.tokens()).toEqual([...bytes].map((_, i) => i));
    const half = new ChatInput(bytes.subarray(0, 4));
    expect(half.text).toBe("日\uFFFD");
  });

  it("rejects bad token ids and offsets", () => {
    const input = new ChatInput("x");
    expect(() => input.append("y", -2)).toThrow(/token/);
    expect(() => input.append("y", 1.5)).toThrow(/token/);
    expect(() => input.tokenAt(1)).toThrow(/offset/);
  });

  it("matches a plain concatenation for any sequence of pieces (growth keeps old data)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uint8Array({ maxLength: 40 }), fc.option(fc.nat(1000))), { maxLength: 60 }), (pieces) => {
        const input = new ChatInput(undefined, 1);
        const want: number[] = [];
        const wantTokens: (number | null)[] = [];
        for (const [piece, token] of pieces) {
          input.append(piece, token);
          piece.forEach((b, i) => {
            want.push(b);
            wantTokens.push(i === 0 ? token : null);
          });
        }
        expect([...input.bytes]).toEqual(want);
        expect(input.tokens()).toEqual(wantTokens);
      }),
    );
  });
});
