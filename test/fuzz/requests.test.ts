// Fuzz, requests: random chat completion requests (and request-supplied templates) through
// createChatCompletion in child processes: a completion or a coded error, never a crash or hang.
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./requests-class.js";

it("requests: no crash, no hang, no uncoded error", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("requests", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 60_000 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.ok).toBeGreaterThan(10);
  expect(s.coded).toBeGreaterThan(50);
}, 1_800_000);
