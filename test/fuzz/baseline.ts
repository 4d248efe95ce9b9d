// The baseline for scripts/fuzz.mjs: the GGUF and grammar corpora given to the raw addon, with
// none of llamapeg's pre-checks, to show what they prevent. Run with the TS loader:
// node --import ./test/fuzz/ts-register.mjs test/fuzz/baseline.ts [ci|long]
import { formatSummary, runFuzzClass } from "./classes.js";
import { fuzzClass as gguf } from "./gguf-class.js";
import { fuzzClass as grammars } from "./grammars-class.js";

const size = process.argv[2] === "ci" ? "ci" : "long";
for (const [name, cls] of [["gguf", gguf], ["grammars", grammars]] as const) {
  const cases = await (cls.cases as (seed: number, size: "ci" | "long") => unknown[] | Promise<unknown[]>)(1, size);
  const describe = (i: number): string => (cls.describe as (c: unknown) => string)(cases[i]);
  const s = await runFuzzClass(name, describe, cases.length, { size, raw: true, caseTimeoutMs: 30_000 });
  console.log(formatSummary(s));
  for (const f of s.failures.slice(0, 40)) {
    const r = f.result as { outcome: string; signal?: string; stderr?: string; error?: string };
    const why = (r.stderr ?? r.error ?? "").split("\n").filter((l) => /assert|abort|error|overflow/i.test(l)).slice(-1)[0] ?? "";
    console.log(`  ${r.outcome}${r.signal ? ` (${r.signal})` : ""}: ${f.case} ${why.slice(0, 160)}`);
  }
}
process.exit(0);
