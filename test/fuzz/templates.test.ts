// Fuzz, templates: every attack template, escape payload and random template ends in a prompt or a
// coded error, in a child process each (a V8 fatal error would kill only the child), and fails
// fast: figures are printed and, with LLAMAPEG_FUZZ_REPORT set, written for scripts/fuzz.mjs.
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./templates-class.js";

it("templates: no crash, no hang, no uncoded error", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("templates", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 20_000 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  // the attacks are stopped by the budgets, not rendered
  expect(s.codes.ERR_TEMPLATE_LIMIT).toBeGreaterThanOrEqual(30);
}, 900_000);
