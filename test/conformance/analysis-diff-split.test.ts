/**
 * `calculateDiffSplit` vs the reference's `calculate_diff_split` (harness command
 * `chat.analyze_diff_split`) on random marker-heavy strings: every inference reads these splits,
 * so they must agree exactly, edge cases included.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { calculateDiffSplit } from "../../lib/chat/analysis/diff-split.js";
import { fromBytes, toBytes } from "../../lib/chat/analysis/text.js";
import { getHarness, type Harness } from "../support/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(async () => {
  await h?.close();
});

// pieces that make markers, partial markers, shared text and whitespace likely
const piece = fc.constantFrom("<a>", "</a>", "<b>", "[T]", "[/T]", "<", ">", "[", "]", "x", "y", "xy", " ", "\n", "<|s|>", "é", "｜");
const text = fc.array(piece, { maxLength: 8 }).map((p) => p.join(""));

async function reference(left: string, right: string) {
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  const r = await h.call("chat.analyze_diff_split", { left_b64: b64(left), right_b64: b64(right) });
  const bytes = (k: string) => (r[`${k}_b64`] !== undefined ? Buffer.from(r[`${k}_b64`], "base64").toString("latin1") : toBytes(r[k]));
  return { prefix: bytes("prefix"), suffix: bytes("suffix"), left: bytes("left"), right: bytes("right") };
}

describe("calculateDiffSplit matches the reference", () => {
  it("on random pairs that share a prefix and a suffix", async () => {
    await fc.assert(
      fc.asyncProperty(text, text, text, text, async (pre, a, b, post) => {
        const left = pre + a + post;
        const right = pre + b + post;
        const ours = calculateDiffSplit(toBytes(left), toBytes(right));
        const ref = await reference(left, right);
        expect({ ours: show(ours) }).toEqual({ ours: show(ref) });
      }),
      { numRuns: 300 },
    );
  });

  it("on unrelated random pairs", async () => {
    await fc.assert(
      fc.asyncProperty(text, text, async (left, right) => {
        expect(show(calculateDiffSplit(toBytes(left), toBytes(right)))).toEqual(show(await reference(left, right)));
      }),
      { numRuns: 200 },
    );
  });
});

/** Readable byte strings in failure messages. */
function show(d: { prefix: string; suffix: string; left: string; right: string }) {
  return { prefix: fromBytes(d.prefix), suffix: fromBytes(d.suffix), left: fromBytes(d.left), right: fromBytes(d.right), raw: d };
}
