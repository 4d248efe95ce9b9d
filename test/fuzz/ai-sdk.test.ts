// Fuzz, AI SDK provider left early (issue 28.2): breaks, aborts and cancels at random moments, each
// followed by a call that must run; in child processes with a timeout (a deadlock is a hang) and
// an RSS watchdog; an unhandled rejection ends the child (a crash).
import { expect, it } from "vitest";

import { fuzzClass } from "./ai-sdk-class.js";
import { formatSummary, runFuzzClass } from "./classes.js";

it("ai-sdk: leaving a stream early never deadlocks, never gives ERR_BUSY, never an unhandled rejection", async () => {
  const size = process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci";
  const cases = await fuzzClass.cases(1, size);
  const s = await runFuzzClass("ai-sdk", (i) => fuzzClass.describe(cases[i]!), cases.length, { size, caseTimeoutMs: 120_000, rssLimitMb: 2048 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.ok).toBe(cases.length);
}, 1_800_000);
