// Issue 9: how idle OpenMP threads wait is the user's choice, as in llama.cpp; loading the addon
// must not make one. libgomp reads OMP_WAIT_POLICY / GOMP_SPINCOUNT once, when the CPU backend
// module pulls it in, and prints what it settled on with OMP_DISPLAY_ENV=verbose. A loader that
// forced `passive` while loading (round 1 did, and it came back once through a merge) cost 2-3x at
// 2 threads on an idle 2-core machine (docs/bench.md).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";

function spinCount(extra: Record<string, string>): string {
  const env: Record<string, string | undefined> = { ...process.env, OMP_DISPLAY_ENV: "verbose", ...extra };
  if (!("OMP_WAIT_POLICY" in extra)) delete env.OMP_WAIT_POLICY;
  delete env.GOMP_SPINCOUNT;
  const script = `const { loadBinding } = await import(${JSON.stringify(join(packageRoot, "dist", "native", "load.js"))}); loadBinding();`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000, env });
  expect(r.status, r.stderr).toBe(0);
  const m = /GOMP_SPINCOUNT = '(\d+)'/.exec(r.stderr);
  expect(m, `libgomp printed no GOMP_SPINCOUNT (not an OpenMP build?):\n${r.stderr}`).not.toBeNull();
  return m![1]!;
}

describe("OpenMP wait policy", () => {
  it("is libgomp's default when the user set none, and the user's when set", () => {
    expect(spinCount({})).not.toBe("0");
    expect(spinCount({ OMP_WAIT_POLICY: "passive" })).toBe("0");
  });
});
