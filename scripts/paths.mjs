// The cache folder rule of lib/paths.ts for the install-time scripts, which run before dist/
// exists (vendoring llama.cpp for a build from source). Keep the two equal
// (test/unit/paths.test.ts compares them).
import { homedir, tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

export function cacheDir({ platform = process.platform, env = process.env, home } = {}) {
  const given = env.LLAMAPEG_CACHE_DIR;
  if (given) return resolve(given);
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : undefined;
  if (platform === "win32") {
    const local = env.LOCALAPPDATA;
    if (local) return join(local, "llamapeg", "Cache");
  } else if (xdg) {
    return join(xdg, "llamapeg");
  }
  if (home === undefined) {
    try {
      home = homedir();
    } catch {
      home = "";
    }
  }
  if (!home) return join(tmpdir(), "llamapeg-cache");
  if (platform === "win32") return join(home, "AppData", "Local", "llamapeg", "Cache");
  if (platform === "darwin") return join(home, "Library", "Caches", "llamapeg");
  return join(home, ".cache", "llamapeg");
}
