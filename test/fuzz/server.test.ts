// Fuzz, hostile HTTP (issue 28.5, 28.7): every kind of hostile request is its 4xx in OpenAI's error
// shape, never a 500 or a crash, refused at once; the summary prints the longest event-loop stall
// while a case was handled (what a GET /health beside it waited at most). In child processes with
// a timeout and an RSS watchdog.
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./server-class.js";

it("server: hostile requests are 4xx in OpenAI's shape, never 500, never a crash", async () => {
  const cases = await fuzzClass.cases(1, "ci");
  const s = await runFuzzClass("server", (i) => fuzzClass.describe(cases[i]!), cases.length, { caseTimeoutMs: 120_000, rssLimitMb: 3072, track: ["eventLoopStallMs", "requestsMs"] });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  expect(s.ok).toBe(cases.length);
}, 900_000);
