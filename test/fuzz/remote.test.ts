// Fuzz, hostile llama-servers (issue 28.8): alone, each is a coded error (ERR_REMOTE_*) within the
// deadline and under the RSS limit; beside a good server the request fails over and completes.
import { expect, it } from "vitest";

import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass } from "./remote-class.js";

it("remote: hostile servers are coded errors, or failed over, within the deadline and bounded memory", async () => {
  const cases = await fuzzClass.cases(1, "ci");
  const s = await runFuzzClass("remote", (i) => fuzzClass.describe(cases[i]!), cases.length, { caseTimeoutMs: 60_000, rssLimitMb: 1024 });
  console.log(formatSummary(s));
  expect(s.failures).toEqual([]);
  // five alone (coded), five beside a good server (completed there)
  expect(s.ok).toBe(5);
  expect(s.coded).toBe(5);
  expect(Object.keys(s.codes).every((c) => c.startsWith("ERR_REMOTE_"))).toBe(true);
}, 600_000);
