// binding.gyp: every tool that drives node-gyp (`node-gyp rebuild`, npm's gyp path,
// @electron/rebuild, IDEs) runs the one build script, which compiles nothing when a prebuilt
// platform package or an up-to-date build is present. Run on the packed package installed into an
// empty project (as test/install/pack-install.test.ts does), offline, with Node's local headers
// (--nodedir) and a PATH with node, npm, sh, python3, make and file tools but no compiler, cmake
// or git: a
// node-gyp run that tried to compile would fail. The build from source through node-gyp (a full
// llama.cpp compile, minutes) runs with LLAMAPEG_FULL=1.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";
import { minimalPath, npm, which, writeProject } from "./project.js";

const full = /^(1|true|yes)$/i.test(process.env.LLAMAPEG_FULL ?? "");
const work = mkdtempSync(join(tmpdir(), "llamapeg-gyp-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const nodeGyp = join(packageRoot, "node_modules", "node-gyp", "bin", "node-gyp.js");
const nodedir = dirname(dirname(process.execPath)); // <prefix>/include/node: Node's own headers
const platformDir = `${process.platform}-${process.arch}`;
let env: NodeJS.ProcessEnv;
let mainTarball = "";
let platformTarball = "";

function script(name: string, args: string[]): string {
  const r = spawnSync(process.execPath, [join(packageRoot, "scripts", name), ...args], { cwd: packageRoot, encoding: "utf8", timeout: 300_000 });
  if (r.status !== 0) throw new Error(`${name} ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** `node-gyp rebuild` in the installed package, as @electron/rebuild runs it (there: with Electron's headers). */
function gypRebuild(pkg: string, runEnv = env) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [nodeGyp, "rebuild", `--nodedir=${nodedir}`], { cwd: pkg, env: runEnv, encoding: "utf8", timeout: 1_800_000 });
  return { status: r.status, out: `${r.stdout}\n${r.stderr}`, ms: Date.now() - started };
}

/** Which addon the installed package loads, from a fresh process. */
function loaded(project: string, runEnv = env): { source: string; path: string; package?: string } {
  const probe = "import('llamapeg').then((m) => console.log(JSON.stringify(m.systemInfo().binary)))";
  const r = spawnSync("node", ["--input-type=module", "-e", probe], { cwd: project, env: runEnv, encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`the addon did not load: ${r.stderr}`);
  return JSON.parse(r.stdout) as { source: string; path: string; package?: string };
}

function install(dir: string, tarballs: { main: string; platform?: string }, scripts = true): string {
  writeProject(dir, packageRoot, tarballs);
  const r = npm(["ci", "--offline", "--no-audit", "--no-fund", ...(scripts ? [] : ["--ignore-scripts"])], dir, env);
  if (r.status !== 0) throw new Error(`npm ci failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return join(dir, "node_modules", "llamapeg");
}

beforeAll(() => {
  const made = JSON.parse(script("prebuild.mjs", ["--from-build", join(packageRoot, "build", "Release"), "--out", join(work, "platform"), "--pack"])) as { tarball: string }[];
  platformTarball = made[0]!.tarball;
  const key = /^llamapeg-(.+)-\d+\.\d+\.\d+.*\.tgz$/.exec(basename(platformTarball))![1]!;
  mainTarball = script("prebuild.mjs", ["--main", "--out", work, "--platforms", key]).split("\n").pop()!;
  // node-gyp itself needs python3 and make; nothing else that builds is there
  const bin = minimalPath(join(work, "bin"));
  // (python3 by its interpreter's path: a pyenv shim is a bash script, and bash is not there)
  const python = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).stdout.trim();
  const make = which("make");
  if (!python || !make) throw new Error("node-gyp needs python3 and make on PATH");
  symlinkSync(realpathSync(python), join(bin, "python3"));
  symlinkSync(realpathSync(make), join(bin, "make"));
  // and the file tools its Makefile calls (not a compiler among them)
  for (const tool of ["printf", "mkdir", "rm", "touch", "sed", "mv", "cp", "ln", "cat", "echo", "dirname", "basename", "tr", "uname", "flock"]) {
    const found = which(tool);
    if (found) symlinkSync(found, join(bin, tool));
  }
  env = {
    HOME: process.env.HOME,
    PATH: bin,
    XDG_CACHE_HOME: join(work, "cache"),
    npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? "", ".npm"),
    OMP_WAIT_POLICY: "passive",
  };
}, 600_000);

describe("binding.gyp in the packed package", () => {
  it("is in the tarball, and npm's install path is still the install script (not node-gyp)", () => {
    const files = spawnSync("tar", ["tzf", mainTarball], { encoding: "utf8" }).stdout.split("\n");
    expect(files).toContain("package/binding.gyp");
    const manifest = JSON.parse(spawnSync("tar", ["xzf", mainTarball, "-O", "package/package.json"], { encoding: "utf8" }).stdout) as { scripts: Record<string, string> };
    expect(manifest.scripts.install).toBe("node scripts/build-native.mjs --unless-prebuilt");
  });

  describe("with the prebuilt platform package installed", () => {
    let project = "";
    let pkg = "";
    beforeAll(() => {
      project = join(work, "prebuilt");
      pkg = install(project, { main: mainTarball, platform: platformTarball });
    }, 600_000);

    it("`node-gyp rebuild` compiles nothing, exits 0, and the platform package still loads", () => {
      for (const tool of ["cc", "c++", "g++", "cmake", "ninja", "git"]) expect(which(tool, env.PATH), tool).toBeUndefined();
      const r = gypRebuild(pkg);
      expect(r.status, r.out).toBe(0);
      expect(r.out).toMatch(/\[llamapeg build\] using @llamapeg\/[a-z0-9-]+; nothing to build/);
      expect(r.out).not.toMatch(/building from source|cmake-js/);
      expect(existsSync(join(pkg, "build-gyp")), "no cmake build folder").toBe(false);
      expect(existsSync(join(pkg, "prebuilds")), "nothing staged").toBe(false);
      expect(existsSync(join(pkg, "vendor", "llama.cpp")), "no llama.cpp sources fetched").toBe(false);
      expect(loaded(project)).toMatchObject({ source: "package", package: expect.stringMatching(/^@llamapeg\//) });
      console.log(`[node-gyp] rebuild with the platform package: ${(r.ms / 1000).toFixed(1)} s`);
    });

    it("`npm rebuild llamapeg` runs the install script: nothing to build", () => {
      const r = npm(["rebuild", "llamapeg", "--foreground-scripts"], project, env);
      expect(r.status, r.stderr).toBe(0);
      expect(`${r.stdout}\n${r.stderr}`).toMatch(/using @llamapeg\/[a-z0-9-]+; nothing to build/);
      expect(loaded(project).source).toBe("package");
    });
  });

  describe("with an up-to-date build from source and no platform package", () => {
    let project = "";
    let pkg = "";
    let loadError = "";
    beforeAll(() => {
      project = join(work, "from-source");
      // installed with scripts off, then given the copy a build from source leaves (the install
      // script's build copies its outputs to prebuilds/<platform>-<arch>/): this run's own build
      pkg = install(project, { main: mainTarball }, false);
      loadError = spawnSync("node", ["--input-type=module", "-e", "import('llamapeg').then((m) => m.systemInfo())"], { cwd: project, env, encoding: "utf8", timeout: 60_000 }).stderr;
      const dest = join(pkg, "prebuilds", platformDir);
      mkdirSync(dest, { recursive: true });
      const release = join(packageRoot, "build", "Release");
      for (const f of readdirSync(release)) if (/\.(node|so|dylib|dll)$/.test(f)) copyFileSync(join(release, f), join(dest, f));
      writeFileSync(join(dest, "llamapeg-build.json"), JSON.stringify({ backends: process.platform === "darwin" ? "metal" : "cpu", variants: "OFF" }));
    }, 600_000);

    it("installed with scripts off (pnpm 10, npm's allowScripts) and nothing built: the load error prints the one command that builds it", () => {
      const command = `node "${join(pkg, "scripts", "build-native.mjs")}"`;
      expect(loadError).toContain("ERR_NATIVE_LOAD");
      expect(loadError).toContain(`or build from source: \`${command}\``);
      // that command is the build (here: no compiler, so its one message)
      const r = spawnSync("sh", ["-c", command], { cwd: project, env, encoding: "utf8", timeout: 60_000 });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/cannot build llamapeg from source for [a-z0-9-]+: cmake/);
    });

    it("`node-gyp rebuild` compiles nothing and that build loads", () => {
      const r = gypRebuild(pkg);
      expect(r.status, r.out).toBe(0);
      expect(r.out).toContain(`using ${join(pkg, "prebuilds", platformDir)}; nothing to build`);
      expect(existsSync(join(pkg, "build-gyp"))).toBe(false);
      const binary = loaded(project);
      expect(binary.source).toBe("build");
      expect(binary.path).toBe(join(realpathSync(pkg), "prebuilds", platformDir, "llamapeg.node"));
      console.log(`[node-gyp] rebuild with an up-to-date build: ${(r.ms / 1000).toFixed(1)} s`);
    });

    it("`npm rebuild llamapeg` with the same build: nothing to build", () => {
      const r = npm(["rebuild", "llamapeg", "--foreground-scripts"], project, env);
      expect(r.status, r.stderr).toBe(0);
      expect(`${r.stdout}\n${r.stderr}`).toContain("nothing to build");
    });

    it("a build for other backends than asked, or older than the sources, is rebuilt (here: no compiler, so the one message)", () => {
      const other = gypRebuild(pkg, { ...env, LLAMAPEG_BUILD_BACKENDS: "vulkan" });
      expect(other.status).not.toBe(0);
      expect(other.out).toMatch(/no prebuilt or up-to-date build for [a-z0-9-]+: building from source/);
      const future = new Date(Date.now() + 60_000);
      utimesSync(join(pkg, "CMakeLists.txt"), future, future);
      const stale = gypRebuild(pkg);
      expect(stale.status).not.toBe(0);
      expect(stale.out).toMatch(/no prebuilt or up-to-date build for [a-z0-9-]+: building from source/);
      expect(stale.out).toMatch(/cannot build llamapeg from source for [a-z0-9-]+: cmake \(>= 3\.19\), a C\+\+17 compiler .* not on PATH\. Install: /);
    });
  });

  // A full llama.cpp compile (about 6 min on 2 cores with nothing else running; 76 s here at load
  // 8-16 with the objects in ccache: CCACHE_BASEDIR=/work and TMPDIR under /work).
  describe.runIf(full)("with nothing built (LLAMAPEG_FULL=1)", () => {
    it("`node-gyp rebuild` builds from source with cmake-js, the build loads, and a second run compiles nothing", () => {
      const project = join(work, "bare");
      const pkg = install(project, { main: mainTarball }, false);
      // offline: the pinned llama.cpp sources of this checkout, where the package looks for them
      // (a link, so ccache with CCACHE_BASEDIR sees the same relative paths as this checkout's build)
      symlinkSync(realpathSync(join(packageRoot, "vendor", "llama.cpp")), join(pkg, "vendor", "llama.cpp"));
      const buildEnv = { ...process.env, XDG_CACHE_HOME: env.XDG_CACHE_HOME, OMP_WAIT_POLICY: "passive" };
      const first = gypRebuild(pkg, buildEnv);
      expect(first.status, first.out.slice(-4000)).toBe(0);
      expect(first.out).toContain("building from source");
      expect(existsSync(join(pkg, "build-gyp", "Release", "llamapeg.node"))).toBe(true);
      expect(loaded(project, buildEnv).path).toBe(join(realpathSync(pkg), "prebuilds", platformDir, "llamapeg.node"));
      const second = gypRebuild(pkg, buildEnv);
      expect(second.status, second.out).toBe(0);
      expect(second.out).toContain("nothing to build");
      console.log(`[node-gyp] from source: ${(first.ms / 1000).toFixed(0)} s, then ${(second.ms / 1000).toFixed(1)} s`);
    }, 1_800_000);
  });
});
