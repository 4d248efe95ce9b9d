// Child processes: leaving while a generation thread runs must not crash (process.exit() and
// uncaught exceptions skip environment teardown, so the addon stops its threads from the "exit"
// hook before llama.cpp's statics are destroyed), and without a logger nothing reaches stderr.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";

const script = join(import.meta.dirname, "fixtures", "exit-while-generating.mjs");
let modelPath: string;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
});

function run(mode: string) {
  // Spinning barriers crawl on a busy machine (the suite runs several files at once).
  const env = { ...process.env, OMP_WAIT_POLICY: "passive" };
  return spawnSync(process.execPath, [script, packageRoot, modelPath, mode], { encoding: "utf8", timeout: 60_000, env });
}

describe("process exit during a generation", () => {
  it.each([
    ["exit", 0],
    ["throw", 1],
    ["abandon", 0],
    ["exit-during-load", 0],
  ])("%s: exits with status %i, no signal", (mode, status) => {
    const r = run(mode);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(status);
  });
});

describe("quiet by default", () => {
  it("loading, failing grammars and generating print nothing to stderr without a logger", () => {
    const quiet = join(import.meta.dirname, "fixtures", "quiet.mjs");
    const r = spawnSync(process.execPath, [quiet, packageRoot, modelPath], { encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual(["ERR_GRAMMAR_INVALID", "ERR_GRAMMAR_INVALID", "ERR_GRAMMAR_INVALID", "done"]);
    expect(r.stderr).toBe("");
  });
});
