// Fuzz, GGUF files: every damaged header, metadata and tensor table of gguf-corpus.ts, loaded
// through loadModel in child processes, ends in a coded error or a working model; none aborts
// the process (the same corpus on the raw addon does: scripts/fuzz.mjs shows how many).
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./gguf-class.js";

it("GGUF files: no crash, no hang, no uncoded error through loadModel", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("gguf", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 60_000 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.codes.ERR_MODEL_CORRUPT).toBeGreaterThan(150);
  expect(s.ok).toBeGreaterThan(50);
}, 1_800_000);
