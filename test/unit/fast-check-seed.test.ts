import fc from "fast-check";
import { describe, expect, it } from "vitest";

describe("property tests' seed (test/support/fast-check-seed.ts)", () => {
  it("is fixed unless LLAMAPEG_FC_SEED says random", () => {
    const env = process.env.LLAMAPEG_FC_SEED;
    const seed = fc.readConfigureGlobal().seed;
    if (env === "random") expect(seed).toBeUndefined();
    else expect(seed).toBe(Number(env ?? "20261201"));
    // The same seed draws the same values: two samples agree.
    if (seed !== undefined) expect(fc.sample(fc.integer(), { seed, numRuns: 5 })).toEqual(fc.sample(fc.integer(), { seed, numRuns: 5 }));
  });
});
