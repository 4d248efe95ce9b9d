/**
 * PEG engine vs the C++ reference, over the corpus in test/fixtures/peg/*.jsonl (one case per line:
 * a builder expression and inputs). For every case: the same arena JSON from the same builder calls,
 * serialization round trips both ways, the same GBNF (lazy and not), and for every input the same
 * result type, end and tagged AST, for every byte prefix in partial mode and in complete mode.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PegArena } from "../../lib/peg/index.js";
import { type Harness, getHarness } from "../support/harness.js";
import { type NormNode, type RefParse, caseInputs, canonicalArena, loadCorpus, ourTree, refTree } from "./peg-compare.js";
import { buildFromExpr } from "./peg-expr.js";

const corpus = loadCorpus();
let h: Harness;
const totals = { cases: 0, parses: 0, streamed: 0, gbnf: 0 };

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  console.log(`peg conformance: ${totals.cases} cases, ${totals.parses} parses (+${totals.streamed} through stream parsers), ${totals.gbnf} grammars compared`);
});

function b64(b: Uint8Array): string {
  return Buffer.from(b).toString("base64");
}

interface Mismatch {
  input: string;
  partial: boolean;
  start: number;
  ref: unknown;
  ours: unknown;
}

describe("PEG conformance with the reference", () => {
  it("has a corpus", () => {
    expect(corpus.length).toBeGreaterThan(50);
  });

  for (const c of corpus) {
    it(`${c.file}: ${c.name}`, async () => {
      totals.cases++;
      const built = await h.request<{ arena: any; arena_text: string }>("peg.build", { expr: c.expr });
      if (!built.ok) {
        expect(() => buildFromExpr(c.expr), `reference rejected: ${built.error}`).toThrow();
        return;
      }
      const refArena = built.result!.arena;
      // load_only: the reference built the tree with helpers we do not interpret; parse what it built
      const arena = c.load_only ? PegArena.fromJSON(built.result!.arena_text) : buildFromExpr(c.expr);
      expect(canonicalArena(arena.toJSON())).toEqual(canonicalArena(refArena));

      // A tree serialized by the reference loads here and serializes back the same; ours loads there.
      expect(canonicalArena(PegArena.fromJSON(built.result!.arena_text).toJSON())).toEqual(canonicalArena(refArena));
      const loaded = await h.call<{ arena: any }>("peg.load", { arena: JSON.stringify(arena.toJSON()) });
      expect(canonicalArena(loaded.arena)).toEqual(canonicalArena(arena.toJSON()));

      if (arena.root !== -1) {
        const dump = await h.call<{ dump: string }>("peg.dump", { expr: c.expr });
        expect(arena.dump(), "dump").toBe(dump.dump);
      }

      for (const lazy of [false, true]) {
        const ref = await h.request<{ gbnf: string }>("peg.gbnf", { expr: c.expr, lazy, ...(c.gbnf ?? {}) });
        totals.gbnf++;
        const opts = { lazy, resolveRefs: (c.gbnf?.resolve_refs as unknown[] | undefined) ?? [] };
        if (!ref.ok) {
          expect(() => arena.toGbnf(opts), `reference rejected the grammar: ${ref.error}`).toThrow();
          continue;
        }
        expect(arena.toGbnf(opts), `gbnf lazy=${lazy}`).toBe(ref.result!.gbnf);
        // the tree the reference serialized exports the same grammar as the one it built
        const fromRef = await h.request<{ gbnf: string }>("peg.gbnf", { arena: built.result!.arena_text, lazy, ...(c.gbnf ?? {}) });
        if (fromRef.ok) expect(PegArena.fromJSON(built.result!.arena_text).toGbnf(opts), `loaded arena gbnf lazy=${lazy}`).toBe(fromRef.result!.gbnf);
      }

      const jobs: Array<{ input: Uint8Array; partial: boolean; start: number }> = [];
      for (const input of caseInputs(c)) {
        const ends = c.no_prefixes ? [input.length] : Array.from({ length: input.length + 1 }, (_, i) => i);
        for (const n of ends) for (const partial of [true, false]) jobs.push({ input: input.subarray(0, n), partial, start: 0 });
        // and from a later offset (the `start` argument of parse)
        if (input.length > 1) for (const partial of [true, false]) jobs.push({ input, partial, start: 1 });
      }
      const refs = await Promise.all(
        jobs.map((j) => h.call<RefParse>("peg.parse", { expr: c.expr, input_b64: b64(j.input), partial: j.partial, start: j.start })),
      );
      const mismatches: Mismatch[] = [];
      // The partial prefix sweeps also go through one stream parser per input (growing input,
      // memo reuse): it must answer exactly what the reference answers for each prefix.
      let stream = arena.streamParser();
      let streamOf: Uint8Array | undefined;
      jobs.forEach((j, i) => {
        totals.parses++;
        const ref = refs[i]!;
        const ours = arena.parse(j.input, { partial: j.partial, start: j.start });
        if (j.partial && j.start === 0) {
          if (streamOf === undefined || j.input.length < streamOf.length || j.input.buffer !== streamOf.buffer) stream = arena.streamParser();
          streamOf = j.input;
          const streamed = stream.parse(j.input, { partial: true });
          totals.streamed++;
          const so = { type: streamed.type, start: streamed.start, end: streamed.end, ast: ourTree(streamed) };
          const r0 = { type: ref.type, start: ref.start, end: ref.end, ast: refTree(ref, j.input) };
          if (JSON.stringify(r0) !== JSON.stringify(so)) {
            mismatches.push({ input: `[stream] ${Buffer.from(j.input).toString("latin1")}`, partial: true, start: 0, ref: r0, ours: so });
          }
        }
        const r = { type: ref.type, start: ref.start, end: ref.end, ast: refTree(ref, j.input) };
        const o: { type: string; start: number; end: number; ast: NormNode[] } = { type: ours.type, start: ours.start, end: ours.end, ast: ourTree(ours) };
        if (JSON.stringify(r) !== JSON.stringify(o)) {
          mismatches.push({ input: Buffer.from(j.input).toString("latin1"), partial: j.partial, start: j.start, ref: r, ours: o });
        }
      });
      expect(mismatches.slice(0, 3), `${mismatches.length} of ${jobs.length} parses differ`).toEqual([]);
    });
  }
});
