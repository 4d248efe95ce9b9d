// What a fuzz class is, and the parent side: run a class in child processes and sum it up.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { runInChildren, type ChildResult } from "./child.js";

export interface FuzzClass<C> {
  /** Deterministic for a seed; "ci" is the size `npm test` runs, "long" the size `npm run fuzz` runs. */
  cases(seed: number, size: "ci" | "long"): C[] | Promise<C[]>;
  describe(c: C): string;
  /** Runs one case in the child. Returns extra fields for the result; throws what the library throws. `raw`: without llamapeg's pre-checks (baseline runs only). */
  run(c: C, o: { raw: boolean }): Promise<Record<string, unknown> | void> | Record<string, unknown> | void;
  close?(): Promise<void> | void;
}

export interface FuzzSummary {
  class: string;
  raw: boolean;
  cases: number;
  ok: number;
  coded: number;
  /** By error code. */
  codes: Record<string, number>;
  uncoded: number;
  /** TypeError/RangeError from an argument check (bad input named, no code yet: issue 16.5). */
  argument: number;
  crashes: number;
  hangs: number;
  /** Cases whose child passed the RSS limit (killed by the watchdog). */
  ooms: number;
  /** Wall time of the slowest case (the shared machine's load inflates it). */
  maxMs: number;
  /** CPU time of the costliest case (all threads of the child, native ones included). */
  maxCpuMs: number;
  peakRssMb: number;
  /** The cases that crashed, hung or threw an uncoded error. */
  failures: { index: number; case: string; result: ChildResult }[];
  /** The three slowest cases, and the case where the child's RSS peaked. */
  slowest: { case: string; ms: number }[];
  peakRssCase: string;
  /** For each numeric result field named in `track`: its largest value and the case. */
  tracked: Record<string, { max: number; case: string }>;
}

const ROOT = join(import.meta.dirname, "..", "..");

export async function runFuzzClass(
  name: string,
  describe: (i: number) => string,
  count: number,
  o: { seed?: number; size?: "ci" | "long"; raw?: boolean; caseTimeoutMs?: number; rssLimitMb?: number; track?: string[] } = {},
): Promise<FuzzSummary> {
  const seed = o.seed ?? 1;
  const size = o.size ?? (process.env.LLAMAPEG_FUZZ === "long" ? "long" : "ci");
  const results = await runInChildren({
    args: (first) => [
      "--import",
      join(ROOT, "test/fuzz/ts-register.mjs"),
      join(ROOT, "test/fuzz/worker.ts"),
      name,
      String(seed),
      size,
      String(first),
      ...(o.raw ? ["raw"] : []),
    ],
    count,
    caseTimeoutMs: o.caseTimeoutMs ?? 30_000,
    ...(o.rssLimitMb !== undefined ? { rssLimitMb: o.rssLimitMb } : {}),
    env: { ...process.env, OMP_WAIT_POLICY: "passive" },
  });
  const s: FuzzSummary = { class: name, raw: o.raw === true, cases: count, ok: 0, coded: 0, codes: {}, uncoded: 0, argument: 0, crashes: 0, hangs: 0, ooms: 0, maxMs: 0, maxCpuMs: 0, peakRssMb: 0, failures: [], slowest: [], peakRssCase: "", tracked: {} };
  results.forEach((res, index) => {
    const r = res as ChildResult & { ms?: number; cpuMs?: number; rssKb?: number; code?: string };
    if (typeof r.cpuMs === "number") s.maxCpuMs = Math.max(s.maxCpuMs, r.cpuMs);
    if (r.outcome === "ok") s.ok++;
    else if (r.outcome === "argument") s.argument++;
    else if (r.outcome === "coded") {
      s.coded++;
      const code = String(r.code);
      s.codes[code] = (s.codes[code] ?? 0) + 1;
    } else {
      if (r.outcome === "crash") s.crashes++;
      else if (r.outcome === "hang") s.hangs++;
      else if (r.outcome === "oom") s.ooms++;
      else s.uncoded++;
      s.failures.push({ index, case: describe(index), result: r });
    }
    if (typeof r.ms === "number") {
      s.maxMs = Math.max(s.maxMs, r.ms);
      s.slowest.push({ case: describe(index), ms: Math.round(r.ms) });
      s.slowest = s.slowest.sort((a, b) => b.ms - a.ms).slice(0, 3);
    }
    for (const field of o.track ?? []) {
      const v = (r as Record<string, unknown>)[field];
      if (typeof v === "number" && !(v <= (s.tracked[field]?.max ?? -Infinity))) s.tracked[field] = { max: v, case: describe(index) };
    }
    // maxRSS only grows within a child: the case that raised it is where it peaked
    if (typeof r.rssKb === "number" && Math.round(r.rssKb / 1024) > s.peakRssMb) {
      s.peakRssMb = Math.round(r.rssKb / 1024);
      s.peakRssCase = describe(index);
    }
  });
  const dir = process.env.LLAMAPEG_FUZZ_REPORT;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}${o.raw ? "-raw" : ""}.json`), JSON.stringify(s, null, 1));
  }
  return s;
}

export function formatSummary(s: FuzzSummary): string {
  return `${s.class}${s.raw ? " (no pre-checks)" : ""}: ${s.cases} cases, ${s.ok} ok, ${s.coded} coded errors ${JSON.stringify(s.codes)}, ${s.argument} argument errors, ${s.uncoded} uncoded, ${s.crashes} crashes, ${s.hangs} hangs, ${s.ooms} over the RSS limit; max ${s.maxMs.toFixed(0)} ms wall, ${s.maxCpuMs.toFixed(0)} ms CPU (slowest: ${s.slowest.map((x) => `${x.case}: ${x.ms} ms`).join("; ")}), peak RSS ${s.peakRssMb} MB (${s.peakRssCase})${Object.entries(s.tracked)
    .map(([k, t]) => `; max ${k} ${t.max} (${t.case})`)
    .join("")}`;
}
