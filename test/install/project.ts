/**
 * A throw-away npm project that installs the packed llamapeg and platform packages the way a
 * user's project does, with nothing else on PATH than node, npm and sh (no compiler, no cmake, no
 * git), offline: its package-lock.json names the two tarballs and takes llamapeg's dependencies
 * from this repository's lock (npm ci put exactly those tarballs into the npm cache).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync, realpathSync } from "node:fs";
import { delimiter, join, relative } from "node:path";

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dev?: boolean;
  devOptional?: boolean;
  [key: string]: unknown;
}

/** The tools the install and the CLI need; everything else (cc, c++, cmake, make, ninja, git) is absent. */
export function minimalPath(binDir: string): string {
  mkdirSync(binDir, { recursive: true });
  for (const tool of ["node", "npm", "npx", "sh"]) {
    const found = which(tool);
    if (!found) throw new Error(`${tool} is not on PATH`);
    symlinkSync(realpathSync(found), join(binDir, tool));
  }
  return binDir;
}

export function which(tool: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      const file = join(dir, tool);
      if (statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

function tarballManifest(tarball: string): Record<string, unknown> {
  return JSON.parse(execFileSync("tar", ["xzf", tarball, "-O", "package/package.json"], { encoding: "utf8" })) as Record<string, unknown>;
}

function integrity(file: string): string {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

/** Writes package.json and package-lock.json for `npm ci` of the tarballs into `dir` (no platform
 * tarball: llamapeg alone, as on a platform without prebuilt binaries). */
export function writeProject(dir: string, repoRoot: string, tarballs: { main: string; platform?: string; more?: string[] }): void {
  mkdirSync(dir, { recursive: true });
  const main = tarballManifest(tarballs.main);
  const platformFiles = [...(tarballs.platform ? [tarballs.platform] : []), ...(tarballs.more ?? [])];
  const platforms = platformFiles.map((file) => ({ file, manifest: tarballManifest(file) }));
  const spec = (file: string) => `file:${relative(dir, file).split("\\").join("/")}`;
  const deps: Record<string, string> = { llamapeg: spec(tarballs.main) };
  for (const p of platforms) deps[p.manifest.name as string] = spec(p.file);
  const name = "llamapeg-install-test";
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, dependencies: deps }, null, 2));

  const repoLock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
  const packages: Record<string, LockEntry> = { "": { name, version: "1.0.0", dependencies: deps } };
  const pick = (keys: string[]) => Object.fromEntries(keys.filter((k) => main[k] !== undefined).map((k) => [k, main[k]]));
  packages["node_modules/llamapeg"] = {
    version: main.version as string,
    resolved: spec(tarballs.main),
    integrity: integrity(tarballs.main),
    hasInstallScript: true,
    // with no platform tarball, the platform packages are as absent as on an unsupported platform
    ...pick(["license", "dependencies", ...(platforms.length ? ["optionalDependencies"] : []), "bin", "engines"]),
  };
  for (const { file, manifest: m } of platforms) {
    packages[`node_modules/${m.name as string}`] = {
      version: m.version as string,
      resolved: spec(file),
      integrity: integrity(file),
      ...Object.fromEntries(["license", "os", "cpu", "libc", "engines"].filter((k) => m[k] !== undefined).map((k) => [k, m[k]])),
    };
  }
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (path === "" || entry.dev || entry.devOptional || !path.startsWith("node_modules/")) continue;
    packages[path] = entry; // llamapeg's own dependencies, hoisted as in the repository
  }
  writeFileSync(join(dir, "package-lock.json"), JSON.stringify({ name, version: "1.0.0", lockfileVersion: 3, requires: true, packages }, null, 2));
}

/** Bytes under a folder (files only, symlinks not followed), and per top-level package. */
export function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

export function packageSizes(nodeModules: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === ".bin") continue;
    if (entry.name.startsWith("@")) {
      for (const sub of readdirSync(join(nodeModules, entry.name))) out[`${entry.name}/${sub}`] = sizeOf(join(nodeModules, entry.name, sub));
    } else {
      out[entry.name] = sizeOf(join(nodeModules, entry.name));
    }
  }
  return out;
}

export function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeout = 300_000) {
  return spawnSync("npm", args, { cwd, env, encoding: "utf8", timeout });
}
