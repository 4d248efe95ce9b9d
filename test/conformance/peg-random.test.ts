/**
 * Random grammars and inputs (fast-check) against the C++ reference: the same arena from the same
 * builder calls, the same GBNF, and the same parse (type, end, tagged AST) for every byte prefix of
 * every input, partial and complete. Complements the fixed corpus in peg.test.ts.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type Harness, getHarness } from "../support/harness.js";
import { pegExpr, pegInput } from "./peg-arbitrary.js";
import { type RefParse, canonicalArena, ourTree, refTree } from "./peg-compare.js";
import { buildFromExpr } from "./peg-expr.js";

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("PEG random conformance with the reference", () => {
  it("random grammars and inputs parse identically", async () => {
    await fc.assert(
      fc.asyncProperty(pegExpr, fc.array(pegInput, { minLength: 1, maxLength: 3 }), async (expr, inputs) => {
        const built = await h.call<{ arena: any; arena_text: string }>("peg.build", { expr });
        const arena = buildFromExpr(expr);
        expect(canonicalArena(arena.toJSON())).toEqual(canonicalArena(built.arena));
        for (const lazy of [false, true]) {
          const g = await h.call<{ gbnf: string }>("peg.gbnf", { arena: built.arena_text, lazy });
          expect(arena.toGbnf({ lazy })).toBe(g.gbnf);
        }
        const jobs = inputs.flatMap((input) =>
          Array.from({ length: input.length + 1 }, (_, n) => [true, false].map((partial) => ({ input: input.subarray(0, n), partial }))).flat(),
        );
        const refs = await Promise.all(
          jobs.map((j) => h.call<RefParse>("peg.parse", { arena: built.arena_text, input_b64: Buffer.from(j.input).toString("base64"), partial: j.partial })),
        );
        jobs.forEach((j, i) => {
          const ref = refs[i]!;
          const ours = arena.parse(j.input, { partial: j.partial });
          expect({ type: ours.type, end: ours.end, ast: ourTree(ours) }, `${JSON.stringify(expr)} on ${Buffer.from(j.input).toString("hex")} partial=${j.partial}`).toEqual({
            type: ref.type,
            end: ref.end,
            ast: refTree(ref, j.input),
          });
        });
      }),
      { numRuns: 300 },
    );
  });

  it("an overlong UTF-8 form is not the character it spells (the reference's known difference)", async () => {
    const expr = ["rule", "r0", ["until_one_of", ["</x>", "ab"]]];
    const built = await h.call<{ arena_text: string }>("peg.build", { expr });
    const input = Uint8Array.from([0xc1, 0xa1]); // an overlong "a"
    const ours = buildFromExpr(expr as never).parse(input, { partial: false });
    // Ours: two bytes of text, no delimiter. The reference decodes C1 A1 as "a", the start of the
    // delimiter "ab", and stops before it.
    expect({ type: ours.type, end: ours.end }).toEqual({ type: "success", end: 2 });
    const ref = await h.call<RefParse>("peg.parse", { arena: built.arena_text, input_b64: Buffer.from(input).toString("base64"), partial: false });
    expect(ref.end).toBe(0);
  });
});
