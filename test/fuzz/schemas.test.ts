// Fuzz, JSON schemas: hostile, fixture and random schemas compiled and sampled in child
// processes: a result or a coded error, never a crash, a hang or a bare RangeError.
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./schemas-class.js";

it("schemas: no crash, no hang, no uncoded error", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("schemas", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 60_000 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.codes.ERR_SCHEMA_INVALID).toBeGreaterThan(10);
  expect(s.ok).toBeGreaterThan(20);
}, 1_800_000);
