import { describe, expect, it } from "vitest";

import { cacheDir, modelsCacheDir } from "../../lib/paths.js";
// @ts-expect-error: a plain .mjs module (the install-time scripts' copy of the rule)
import { cacheDir as scriptCacheDir } from "../../scripts/paths.mjs";

const cases: { name: string; platform: NodeJS.Platform; env: NodeJS.ProcessEnv; home: string; expected: string }[] = [
  { name: "LLAMAPEG_CACHE_DIR wins", platform: "linux", env: { LLAMAPEG_CACHE_DIR: "/tmp/x", XDG_CACHE_HOME: "/c" }, home: "/home/u", expected: "/tmp/x" },
  { name: "XDG_CACHE_HOME on Linux", platform: "linux", env: { XDG_CACHE_HOME: "/c" }, home: "/home/u", expected: "/c/llamapeg" },
  { name: "a relative XDG_CACHE_HOME is ignored", platform: "linux", env: { XDG_CACHE_HOME: "rel" }, home: "/home/u", expected: "/home/u/.cache/llamapeg" },
  { name: "~/.cache on Linux", platform: "linux", env: {}, home: "/home/u", expected: "/home/u/.cache/llamapeg" },
  { name: "~/Library/Caches on macOS", platform: "darwin", env: {}, home: "/Users/u", expected: "/Users/u/Library/Caches/llamapeg" },
  { name: "XDG_CACHE_HOME on macOS", platform: "darwin", env: { XDG_CACHE_HOME: "/c" }, home: "/Users/u", expected: "/c/llamapeg" },
  { name: "LOCALAPPDATA on Windows", platform: "win32", env: { LOCALAPPDATA: "/L", XDG_CACHE_HOME: "/c" }, home: "/U", expected: "/L/llamapeg/Cache" },
  { name: "Windows without LOCALAPPDATA", platform: "win32", env: {}, home: "/U", expected: "/U/AppData/Local/llamapeg/Cache" },
];

describe("cache folder", () => {
  for (const c of cases) {
    it(c.name, () => {
      const got = cacheDir({ platform: c.platform, env: c.env, home: c.home });
      expect(got.split("\\").join("/")).toBe(c.expected);
      // the install-time scripts follow the same rule
      expect(scriptCacheDir({ platform: c.platform, env: c.env, home: c.home })).toBe(got);
    });
  }

  it("never the package folder, and test models go to <cache>/models", () => {
    const dir = cacheDir({ platform: "linux", env: {}, home: "/home/u" });
    expect(dir.startsWith(process.cwd())).toBe(false);
    expect(modelsCacheDir({ platform: "linux", env: {}, home: "/home/u" })).toBe("/home/u/.cache/llamapeg/models");
  });

  it("a user without a home gets a folder under the temp dir", () => {
    const dir = cacheDir({ platform: "linux", env: {}, home: "" });
    expect(dir.endsWith("llamapeg-cache")).toBe(true);
    expect(scriptCacheDir({ platform: "linux", env: {}, home: "" })).toBe(dir);
  });
});
