#!/usr/bin/env node
// npm run prebuild: the platform packages for this machine's platform, ready to publish.
//   @llamapeg/<platform>-<arch>           llamapeg.node, ggml's libraries, the CPU backend modules
//                                         (every variant, chosen at run time), Metal on macOS
//   @llamapeg/<platform>-<arch>-<gpu>     one GPU backend module each (vulkan, cuda), loaded next
//                                         to the first package's libraries
// One build produces all of them (the GPU modules must come from the same ggml build as the
// libraries they load into); each package gets os / cpu / libc fields and the main package's
// version, and must be listed in the main package's optionalDependencies.
//
//   node scripts/prebuild.mjs [--backends vulkan,cuda] [--out DIR] [--pack] [--from-build DIR]
//     --backends     GPU packages to make besides the CPU one (default: none; macOS: Metal is
//                    always inside the base package)
//     --out          where the package folders (and tarballs) go (default: prebuilds/npm)
//     --pack         also `npm pack` each package into --out
//     --from-build   package an existing build folder (e.g. build/Release) instead of building:
//                    no compiler runs. Its CPU modules are whatever that build made (one module
//                    for the build machine unless it was built with LLAMAPEG_CPU_VARIANTS=1).
//     --build-dir    where the portable build happens (default: build-prebuild)
//   node scripts/prebuild.mjs --main [--out DIR] [--platforms linux-x64,...]
//     packs the main package as published: its package.json gains optionalDependencies on every
//     platform package of the release matrix (PLATFORM_PACKAGES), at this exact version. They are
//     not in the repository's package.json, where `npm ci` would fail until they are published.
//     --platforms lists fewer (an install test that has only some of them as tarballs).
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The release matrix (.github/workflows/release.yml builds each on its own runner). */
const PLATFORM_PACKAGES = [
  "linux-x64", "linux-x64-vulkan", "linux-x64-cuda",
  "linux-arm64", "linux-arm64-vulkan", "linux-arm64-cuda",
  "darwin-arm64",
  "win32-x64", "win32-x64-vulkan", "win32-x64-cuda",
].map((p) => `@llamapeg/${p}`);
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const log = (message) => console.error(`[llamapeg prebuild] ${message}`);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  if (i + 1 >= args.length) fail(`${name} needs a value`);
  return args[i + 1];
};
const gpus = option("--backends", "").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s && s !== "cpu");
for (const g of gpus) if (!["vulkan", "cuda"].includes(g)) fail(`--backends: unknown GPU backend ${g} (vulkan, cuda; Metal is part of the macOS package)`);
const outDir = resolve(option("--out", join(root, "prebuilds", "npm")));
const fromBuild = option("--from-build", undefined);
const buildDir = resolve(option("--build-dir", join(root, "build-prebuild")));
const pack = args.includes("--pack");

if (args.includes("--main")) {
  const tarball = packMain(resolve(option("--out", join(root, "prebuilds", "npm"))));
  console.log(tarball);
  process.exit(0);
}

const platform = process.platform;
const key = `${platform === "linux" && isMusl() ? "linuxmusl" : platform}-${process.arch}`;
const ext = platform === "win32" ? ".dll" : ".so";
const prefix = platform === "win32" ? "ggml-" : "libggml-";

let libDir;
if (fromBuild) {
  libDir = resolve(fromBuild);
  if (!existsSync(join(libDir, "llamapeg.node"))) fail(`${libDir} has no llamapeg.node`);
  for (const g of gpus) if (!existsSync(join(libDir, `${prefix}${g}${ext}`))) fail(`${libDir} has no ${prefix}${g}${ext} (build it with LLAMAPEG_BUILD_BACKENDS=${g})`);
  log(`packaging the existing build in ${libDir} (no compiler)`);
} else {
  const backends = [...gpus, ...(platform === "darwin" ? ["metal"] : [])].join(",");
  log(`portable build in ${buildDir}: CPU variants${backends ? ` + ${backends}` : ""}`);
  const started = Date.now();
  const r = spawnSync(process.execPath, [join(root, "scripts", "build-native.mjs"), "--out", buildDir], {
    stdio: "inherit",
    cwd: root,
    env: { ...process.env, LLAMAPEG_CPU_VARIANTS: "1", LLAMAPEG_BUILD_BACKENDS: backends },
  });
  if (r.status !== 0) fail("the build failed");
  log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  libDir = join(buildDir, "Release");
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const files = readdirSync(libDir);
const isGpuModule = (f) => gpuOf(f) !== undefined;
function gpuOf(f) {
  for (const g of ["vulkan", "cuda"]) if (f === `${prefix}${g}${ext}`) return g;
  return undefined;
}

// The base package: the addon, ggml's shared libraries, every CPU module (and Metal on macOS).
const baseFiles = files.filter(
  (f) =>
    f === "llamapeg.node" ||
    (f.startsWith(platform === "win32" ? "llamapeg-ggml" : "libllamapeg-ggml") && f.endsWith(platform === "darwin" ? ".dylib" : ext)) ||
    (f.startsWith(`${prefix}cpu`) && f.endsWith(ext)) ||
    f === `${prefix}metal${ext}` ||
    f === `${prefix}rpc${ext}`,
);
const made = [];
const variants = baseFiles.filter((f) => f.startsWith(`${prefix}cpu-`)).length;
const cpuText = variants > 0 ? `${variants} CPU backends, one per instruction-set level, chosen at run time` : "a CPU backend for the build machine's CPU only (not portable)";
made.push(makePackage(`@llamapeg/${key}`, baseFiles, `llamapeg's native addon for ${describe(key)}: ${cpuText}${platform === "darwin" ? ", and Metal" : ""}`));
for (const g of gpus) {
  made.push(makePackage(`@llamapeg/${key}-${g}`, [`${prefix}${g}${ext}`], `llamapeg's ${g === "cuda" ? "CUDA" : "Vulkan"} backend for ${describe(key)} (loaded with @llamapeg/${key})`));
}
const unused = files.filter((f) => !baseFiles.includes(f) && !isGpuModule(f) && /\.(node|so|dll|dylib)$/.test(f));
if (unused.length) log(`not packaged: ${unused.join(", ")}`);

for (const m of made) if (!PLATFORM_PACKAGES.includes(m.name)) log(`warning: ${m.name} is not in PLATFORM_PACKAGES: the main package will not list it`);
console.log(JSON.stringify(made, null, 2));

// ---------------------------------------------------------------------------------------------

function makePackage(name, names, description) {
  const dir = join(outDir, ...name.split("/"));
  mkdirSync(dir, { recursive: true });
  for (const f of names) {
    copyFileSync(join(libDir, f), join(dir, f));
    strip(join(dir, f));
  }
  const bundled = platform === "linux" ? bundleRuntime(dir, names) : [];
  const all = [...names, ...bundled];
  const manifest = {
    name,
    version: pkg.version,
    description,
    license: pkg.license,
    ...(pkg.repository ? { repository: pkg.repository } : {}),
    os: [platform],
    cpu: [process.arch],
    ...(platform === "linux" ? { libc: [isMusl() ? "musl" : "glibc"] } : {}),
    files: [...all, "LICENSE", "README.md"],
    // yarn PnP: native files must be on disk
    preferUnplugged: true,
    engines: pkg.engines,
    ...(platform === "linux" && !isMusl() ? { config: { glibc: `>=${minGlibc(dir, all)}` } } : {}),
  };
  writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
  writeFileSync(
    join(dir, "README.md"),
    `# ${name}\n\n${description}.\n\nInstalled by [llamapeg](https://www.npmjs.com/package/llamapeg) as an optional dependency; ` +
      `not meant to be used on its own. llama.cpp ${llamaCommit()} (MIT); see docs/install.md in llamapeg.\n` +
      (bundled.length ? `\nAlso contains ${bundled.join(", ")} from GCC (GPL-3.0 with the GCC Runtime Library Exception), the OpenMP runtime of the CPU backends.\n` : ""),
  );
  copyFileSync(existsSync(join(root, "LICENSE")) ? join(root, "LICENSE") : join(root, "vendor", "llama.cpp", "LICENSE"), join(dir, "LICENSE"));
  let size = 0;
  for (const f of all) size += statSync(join(dir, f)).size;
  const entry = { name, dir, files: all, bytes: size };
  if (pack) {
    const tgz = execFileSync("npm", ["pack", "--silent", "--pack-destination", outDir], { cwd: dir, encoding: "utf8" }).trim().split("\n").pop();
    entry.tarball = join(outDir, tgz);
    entry.tarballBytes = statSync(entry.tarball).size;
  }
  log(`${name}: ${all.length} files, ${(size / 1e6).toFixed(1)} MB`);
  return entry;
}

/** `npm pack` of the main package, with optionalDependencies on the platform packages added. */
function packMain(dest) {
  mkdirSync(dest, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "llamapeg-pack-"));
  try {
    // --ignore-scripts: dist/ is built already (npm's prepare would run tsc again)
    const name = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", work], { cwd: root, encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["xzf", join(work, name), "-C", work]);
    const manifestPath = join(work, "package", "package.json");
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    const only = option("--platforms", "");
    const listed = only ? only.split(",").map((p) => `@llamapeg/${p.trim()}`) : PLATFORM_PACKAGES;
    for (const p of listed) if (!PLATFORM_PACKAGES.includes(p)) fail(`--platforms: ${p} is not a platform package`);
    manifest.optionalDependencies = Object.fromEntries(listed.map((p) => [p, manifest.version]));
    writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
    const out = join(dest, name);
    execFileSync("tar", ["czf", out, "-C", work, "package"]);
    log(`${name}: ${(statSync(out).size / 1e6).toFixed(1)} MB, optionalDependencies: ${listed.length} platform packages`);
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Removes symbol tables and debug sections (the dynamic symbols a loader needs stay). */
function strip(file) {
  if (platform === "win32") return;
  const r = spawnSync("strip", platform === "darwin" ? ["-x", file] : ["--strip-unneeded", file], { stdio: "ignore" });
  if (r.status !== 0) log(`strip ${basename(file)} failed; left as built`);
}

/**
 * The OpenMP runtime the CPU modules link (libgomp.so.1) is not on every Linux (slim container
 * images lack it): ship the build machine's copy next to them, found through their $ORIGIN runpath.
 */
function bundleRuntime(dir, names) {
  const wanted = new Set();
  for (const f of names) {
    const r = spawnSync("ldd", [join(dir, f)], { encoding: "utf8" });
    for (const line of (r.stdout ?? "").split("\n")) {
      const m = /^\s*(libgomp\.so\.\d+)\s+=>\s+(\S+)/.exec(line);
      if (m) wanted.add(`${m[1]}\t${m[2]}`);
    }
  }
  const out = [];
  for (const w of wanted) {
    const [soname, path] = w.split("\t");
    copyFileSync(path, join(dir, soname));
    out.push(soname);
  }
  return out;
}

/** The newest GLIBC_x.y symbol version the files need (sharp's `config.glibc` convention). */
function minGlibc(dir, names) {
  let best = [2, 17];
  for (const f of names) {
    const r = spawnSync("objdump", ["-T", join(dir, f)], { encoding: "utf8" });
    for (const m of (r.stdout ?? "").matchAll(/\bGLIBC_(\d+)\.(\d+)/g)) {
      const v = [Number(m[1]), Number(m[2])];
      if (v[0] > best[0] || (v[0] === best[0] && v[1] > best[1])) best = v;
    }
  }
  return best.join(".");
}

function describe(k) {
  return { "linux-x64": "Linux x64 (glibc)", "linux-arm64": "Linux arm64 (glibc)", "darwin-arm64": "macOS arm64", "win32-x64": "Windows x64" }[k] ?? k;
}

function llamaCommit() {
  try {
    return JSON.parse(readFileSync(join(root, "vendor", "llama.cpp.json"), "utf8")).commit.slice(0, 12);
  } catch {
    return "";
  }
}

function isMusl() {
  if (process.platform !== "linux") return false;
  return !process.report?.getReport()?.header?.glibcVersionRuntime;
}

function fail(message) {
  log(message);
  process.exit(1);
}
