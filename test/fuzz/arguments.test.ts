// Fuzz, wrong arguments (issue 28.9): every error the public API throws for them is a
// LlamapegError instance with a code, never a bare TypeError, never a crash.
import { expect, it } from "vitest";

import { fuzzClass } from "./arguments-class.js";
import { formatSummary, runFuzzClass } from "./classes.js";

it("arguments: every refusal is a coded LlamapegError instance", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("arguments", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 60_000, rssLimitMb: 2048 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  // the worker counts a TypeError/RangeError as "argument" only when it has no ERR_ code
  expect(s.argument).toBe(0);
  expect(s.coded).toBeGreaterThan(cases.length / 3);
  // every "generate" case takes a sequence of a context nothing else uses: none can be missing
  expect(s.codes.ERR_NO_SEQUENCE ?? 0).toBe(0);
}, 1_800_000);
