/**
 * Where llamapeg keeps what it creates: the user's cache folder, never the package folder (which
 * may be read-only, inside an app bundle, or shared by several projects).
 *   LLAMAPEG_CACHE_DIR            wins when set
 *   Windows                       %LOCALAPPDATA%\llamapeg\Cache
 *   macOS                         $XDG_CACHE_HOME/llamapeg, else ~/Library/Caches/llamapeg
 *   elsewhere                     $XDG_CACHE_HOME/llamapeg, else ~/.cache/llamapeg
 * scripts/paths.mjs is the same rule for the install-time scripts (they run before dist/ exists);
 * test/unit/paths.test.ts keeps the two equal.
 */
import { homedir, tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

export interface CacheEnv {
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
  home?: string;
}

/** The root of llamapeg's cache. */
export function cacheDir(options: CacheEnv = {}): string {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const given = env.LLAMAPEG_CACHE_DIR;
  if (given) return resolve(given);
  // XDG says a relative XDG_CACHE_HOME is invalid and to be ignored
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : undefined;
  if (platform === "win32") {
    const local = env.LOCALAPPDATA;
    if (local) return join(local, "llamapeg", "Cache");
  } else if (xdg) {
    return join(xdg, "llamapeg");
  }
  let home = options.home;
  if (home === undefined) {
    try {
      home = homedir();
    } catch {
      home = "";
    }
  }
  if (!home) return join(tmpdir(), "llamapeg-cache"); // a user without a home (some CI / service accounts)
  if (platform === "win32") return join(home, "AppData", "Local", "llamapeg", "Cache");
  if (platform === "darwin") return join(home, "Library", "Caches", "llamapeg");
  return join(home, ".cache", "llamapeg");
}

/** Generated test models. */
export function modelsCacheDir(options?: CacheEnv): string {
  return join(cacheDir(options), "models");
}
