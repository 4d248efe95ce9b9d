// Paired ratios and distribution-free intervals for the benchmark scripts.
//
// A 2-vCPU VM drifts by tens of percent between runs, more than the margins the bounds leave
// (0.97x, 0.95x, 1.1x). So the scripts pair each run of one side with the run of the other side
// taken right next to it (same seed, same settings), take the ratio per pair, and judge the median
// of those ratios with its 95% interval: drift that hits both runs of a pair cancels, and the
// interval says whether the run count was enough to show the bound either way.

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * A distribution-free 95% interval of the median: order statistics x(k) and x(n+1-k) with the
 * largest k for which P(Binomial(n, 1/2) < k) <= 0.025. Fewer than 6 values admit none: then the
 * interval is the whole range and `exact` is false.
 */
export function medianInterval(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return { low: NaN, high: NaN, exact: false };
  let k = 0;
  let below = 0; // P(B <= k - 1) for the k tried next
  let term = 0.5 ** n; // P(B = 0)
  for (let j = 0; j < n; j++) {
    if (below + term > 0.025) break;
    below += term;
    k = j + 1;
    term = (term * (n - j)) / (j + 1);
  }
  if (k === 0) return { low: s[0], high: s[n - 1], exact: false };
  return { low: s[k - 1], high: s[n - k], exact: true };
}

/** Ratios a[i] / b[i] of paired runs, their median and interval. */
export function pairedRatio(a, b) {
  const n = Math.min(a.length, b.length);
  const ratios = [];
  for (let i = 0; i < n; i++) if (b[i] > 0 && Number.isFinite(a[i] / b[i])) ratios.push(a[i] / b[i]);
  return { ratios, median: median(ratios), ...medianInterval(ratios) };
}

/**
 * The verdict on a bound for a paired ratio: `atLeast` (ratio >= goal) or at most. "PASS" and
 * "FAIL" when the whole interval lies on one side; otherwise the median decides and the verdict
 * says the interval reaches across ("within noise").
 */
export function verdict(r, goal, { atLeast = true } = {}) {
  const ok = (x) => (atLeast ? x >= goal : x <= goal);
  const m = ok(r.median);
  const shown = r.exact && (m ? ok(atLeast ? r.low : r.high) : !ok(atLeast ? r.high : r.low));
  return { pass: m, shown, label: `${m ? "PASS" : "FAIL"}${shown ? "" : " (within noise)"}` };
}

export function formatRatio(r, digits = 3) {
  if (!Number.isFinite(r.median)) return "n/a";
  return `${r.median.toFixed(digits)} [${r.low.toFixed(digits)}, ${r.high.toFixed(digits)}]${r.exact ? "" : "*"}`;
}
