// Fuzz, grammars: hostile, plan and random GBNF sampled through context.generate in child
// processes: a result or a coded error, never a crash or a hang (the same corpus on the raw
// addon crashes and hangs: scripts/fuzz.mjs).
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./grammars-class.js";

it("grammars: no crash, no hang, no uncoded error", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("grammars", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 60_000 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.codes.ERR_GRAMMAR_INVALID).toBeGreaterThan(20);
  expect(s.ok).toBeGreaterThan(40);
}, 1_800_000);
