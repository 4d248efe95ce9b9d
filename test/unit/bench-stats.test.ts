import { describe, expect, it } from "vitest";

// @ts-expect-error: a plain .mjs module (the benchmark scripts' statistics)
import { medianInterval, pairedRatio, verdict } from "../../scripts/bench/stats.mjs";

// Binomial(n, 1/2) tail, computed directly, to check the order statistics chosen.
function below(n: number, k: number): number {
  let p = 0;
  let c = 1;
  for (let j = 0; j < k; j++) {
    p += c;
    c = (c * (n - j)) / (j + 1);
  }
  return p / 2 ** n;
}

describe("bench statistics", () => {
  it("the median interval uses the largest k with a tail <= 2.5%", () => {
    for (let n = 1; n <= 40; n++) {
      const xs = Array.from({ length: n }, (_, i) => n - i); // unsorted on purpose
      const r = medianInterval(xs);
      if (n < 6) {
        expect(r).toEqual({ low: 1, high: n, exact: false });
        continue;
      }
      const k = r.low; // values are 1..n, so x(k) = k
      expect(r.exact).toBe(true);
      expect(r.high).toBe(n + 1 - k);
      expect(below(n, k)).toBeLessThanOrEqual(0.025);
      expect(below(n, k + 1)).toBeGreaterThan(0.025);
    }
    expect(medianInterval([2, 4, 1, 3, 5, 6, 9, 8, 7, 10, 11, 12, 13, 14, 15])).toEqual({ low: 4, high: 12, exact: true });
  });

  it("pairs runs by index and judges a bound by the whole interval", () => {
    const r = pairedRatio([98, 99, 100, 101, 102, 97, 99], [100, 100, 100, 100, 100, 100, 100]);
    expect(r.ratios).toEqual([0.98, 0.99, 1, 1.01, 1.02, 0.97, 0.99]);
    expect(r.median).toBe(0.99);
    expect(verdict(r, 0.97)).toEqual({ pass: true, shown: true, label: "PASS" });
    expect(verdict(r, 0.98).label).toBe("PASS (within noise)");
    expect(verdict(r, 1.0).label).toBe("FAIL (within noise)");
    expect(verdict(r, 1.05)).toEqual({ pass: false, shown: true, label: "FAIL" });
    // An upper bound (ms per token <= 1.1).
    expect(verdict(pairedRatio([1.2, 1.3, 1.25, 1.22, 1.28, 1.21], [1, 1, 1, 1, 1, 1]), 1.1, { atLeast: false }).label).toBe("FAIL");
    // Too few pairs for an interval: never "shown".
    expect(verdict(pairedRatio([2, 2, 2], [1, 1, 1]), 1).label).toBe("PASS (within noise)");
  });
});
