/**
 * Finds the native addon and loads it with its compute backends.
 *
 * The addon (llamapeg.node) sits in one folder with ggml's shared libraries and its CPU backend
 * modules (one per instruction-set level in a portable build, one for this machine in a build
 * from source). GPU backends are modules too, in the same folder (a build with them) or in their
 * own platform package (@llamapeg/linux-x64-vulkan, ...). Order of the places looked at:
 *   1. LLAMAPEG_NATIVE_PATH: a llamapeg.node file or the folder that holds one
 *   2. this package's own build: build/Release, build/Debug, prebuilds/<platform>-<arch>/ (node-gyp-build)
 *   3. the platform package @llamapeg/<platform>-<arch>, an optional dependency
 * Then the CPU variant this CPU scores best on, then the first GPU backend that loads and finds a
 * device, in the order CUDA, Vulkan, Metal. LLAMAPEG_BACKEND=cpu|cuda|vulkan|metal forces one (and
 * fails with what it tried when that one does not load); `loadModel(path, {backend})` picks one per
 * model.
 */
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { freemem, totalmem } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread } from "node:worker_threads";

import { LlamapegError } from "../errors.js";
import type { BindingModule } from "./binding.js";

export type BackendName = "cuda" | "vulkan" | "metal" | "cpu";
/** GPU backends in the order the loader prefers them. */
export const GPU_BACKENDS: readonly Exclude<BackendName, "cpu">[] = ["cuda", "vulkan", "metal"];
/** The ones that exist on this platform (no CUDA on macOS, Metal only there). */
const PLATFORM_GPU_BACKENDS = GPU_BACKENDS.filter((b) => (process.platform === "darwin" ? b !== "cuda" : b !== "metal"));
const BACKEND_NAMES: readonly BackendName[] = [...GPU_BACKENDS, "cpu"];

/** One device of a loaded backend (ggml's view). */
export interface DeviceInfo {
  /** ggml's device name, e.g. "Vulkan0", "CUDA0", "CPU". */
  name: string;
  description: string;
  /** The ggml backend that owns it: "CPU", "Vulkan", "CUDA", "Metal", ... */
  backend: string;
  type: "cpu" | "gpu" | "igpu" | "accel" | "other";
  memoryFree: number;
  memoryTotal: number;
}

/** What `systemInfo()` reports: which binaries were loaded and what they found. */
export interface SystemInfo {
  /** The backend new models use unless `loadModel(path, {backend})` says otherwise. */
  backend: BackendName;
  /** Backends loaded so far, with their module file and device count. */
  backends: { name: BackendName; path: string; devices: number }[];
  /** The CPU module chosen for this CPU, e.g. "zen4", or "native" for a build from source. */
  cpuVariant: string;
  devices: DeviceInfo[];
  /** Where llamapeg.node came from. */
  binary: { path: string; source: "LLAMAPEG_NATIVE_PATH" | "build" | "package"; package?: string };
  llamaCpp: string;
  /** llama.cpp's own one-line summary of the CPU features in use. */
  features: string;
  /** This machine's RAM, bytes. */
  memory: { total: number; free: number };
  /** Every place and module tried, with the outcome (for bug reports). */
  tried: string[];
}

type NativeDevice = DeviceInfo;

/** The addon's backend functions (native/system.cpp). A build with ggml linked in has none. */
interface NativeSystem {
  backendScore?(path: string): number | null;
  backendLoad?(path: string): { name: string; devices: number };
  devices?(): NativeDevice[];
  dynamicBackends?: boolean;
}

type Native = BindingModule & NativeSystem;

interface LoadedBackend {
  name: BackendName;
  path: string;
  devices: number;
  /** ggml's name for it ("CPU", "CUDA", "Vulkan", "MTL"): the `backend` of its devices. */
  registry: string;
}

interface State {
  native: Native;
  dir: string;
  binary: SystemInfo["binary"];
  cpuVariant: string;
  backend: BackendName;
  loaded: Map<BackendName, LoadedBackend>;
  failed: Map<BackendName, string>;
  tried: string[];
}

/** The package root, from lib/native/ (sources) and dist/native/ (compiled) alike. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

const requireHere = createRequire(import.meta.url);
const moduleExt = process.platform === "win32" ? ".dll" : ".so";
const modulePrefix = process.platform === "win32" ? "ggml-" : "libggml-";

let state: State | undefined;

/** Loads the addon and its backends once per thread; every native call goes through this. */
export function loadBinding(): BindingModule {
  return (state ??= load()).native;
}

/** What was loaded; loads first when nothing is yet. */
export function systemInfo(): SystemInfo {
  const s = (state ??= load());
  const devices = s.native.devices ? s.native.devices() : [];
  return {
    backend: s.backend,
    backends: [...s.loaded.values()].map(({ name, path, devices }) => ({ name, path, devices })),
    cpuVariant: s.cpuVariant,
    devices,
    binary: { ...s.binary },
    llamaCpp: s.native.llamaCppVersion,
    features: s.native.systemInfo(),
    memory: { total: totalmem(), free: freemem() },
    tried: [...s.tried],
  };
}

/** The platform packages' name stem: linux-x64, darwin-arm64, win32-x64, linuxmusl-x64. */
export function platformKey(platform: string = process.platform, arch: string = process.arch, musl = isMusl()): string {
  return `${platform === "linux" && musl ? "linuxmusl" : platform}-${arch}`;
}

/** Parses a backend name from an option or LLAMAPEG_BACKEND; "auto" and "" mean "choose". */
export function parseBackend(value: unknown, where: string): BackendName | undefined {
  if (value === undefined || value === "" || value === "auto") return undefined;
  if (typeof value === "string" && (BACKEND_NAMES as readonly string[]).includes(value.toLowerCase())) {
    return value.toLowerCase() as BackendName;
  }
  throw new LlamapegError(
    "ERR_INVALID_ARGUMENT",
    `${where} must be one of auto, ${BACKEND_NAMES.join(", ")} (got ${JSON.stringify(value)})`,
    { where },
  );
}

/**
 * The ggml device names a model on `backend` goes to (undefined: the default backend). CPU: none
 * (llama.cpp always has the CPU); undefined for a build with ggml linked in (every device). Loads
 * that backend's module first if needed; throws ERR_NATIVE_LOAD, naming what was tried, when it
 * cannot be loaded or finds no device.
 */
export function devicesFor(backend: BackendName | undefined): string[] | undefined {
  const s = (state ??= load());
  if (!s.native.backendLoad || s.native.dynamicBackends === false) {
    // ggml linked in (an older build): its backends are all there; only "cpu" can be asked for
    return backend === "cpu" ? [] : undefined;
  }
  const wanted = backend ?? s.backend;
  if (wanted === "cpu" || !s.native.devices) return [];
  if (!s.loaded.has(wanted) && !s.failed.has(wanted)) tryGpu(s, wanted);
  const loaded = s.loaded.get(wanted);
  if (!loaded || loaded.devices === 0) throw backendError(s, wanted, "loadModel's backend option");
  const registry = loaded.registry;
  return s.native.devices().filter((d) => d.backend === registry && d.type !== "cpu").map((d) => d.name);
}

// ---------------------------------------------------------------------------------------------

function load(): State {
  const tried: string[] = [];
  const forced = parseBackend(process.env.LLAMAPEG_BACKEND, "LLAMAPEG_BACKEND");
  const { native, binary } = loadAddon(tried);
  const dir = dirname(binary.path);
  const s: State = { native, dir, binary, cpuVariant: "linked", backend: "cpu", loaded: new Map(), failed: new Map(), tried };
  if (native.backendLoad && native.dynamicBackends !== false) {
    loadCpu(s);
    loadRpc(s);
    for (const name of forced ? (forced === "cpu" ? [] : [forced]) : PLATFORM_GPU_BACKENDS) {
      tryGpu(s, name);
      const loaded = s.loaded.get(name);
      if (loaded && loaded.devices > 0) {
        s.backend = name;
        break;
      }
    }
    if (forced && forced !== "cpu" && s.backend !== forced) throw backendError(s, forced, "LLAMAPEG_BACKEND");
  } else {
    tried.push(`${binary.path}: ggml is linked in (a build without run-time backends)`);
  }
  // process.exit() and uncaught exceptions skip environment teardown and run exit() at once; stop
  // the generation threads first, or they would compute while llama.cpp's statics are destroyed.
  process.once("exit", (code) => native.stopForExit(isMainThread, typeof code === "number" ? code : 0));
  return s;
}

interface Candidate {
  path: string;
  source: SystemInfo["binary"]["source"];
  package?: string;
}

function loadAddon(tried: string[]): { native: Native; binary: SystemInfo["binary"] } {
  const candidates: Candidate[] = [];
  const override = process.env.LLAMAPEG_NATIVE_PATH;
  if (override) {
    const full = unpacked(resolve(override));
    candidates.push({ path: full.endsWith(".node") ? full : join(full, "llamapeg.node"), source: "LLAMAPEG_NATIVE_PATH" });
  } else {
    const local = localBuild(tried);
    if (local) candidates.push({ path: local, source: "build" });
    const pkg = `@llamapeg/${platformKey()}`;
    candidates.push({ path: "", source: "package", package: pkg }); // resolved when reached
  }
  const errors: unknown[] = [];
  for (const c of candidates) {
    if (c.source === "package") {
      const dir = packageDir(c.package!);
      if (!dir) {
        tried.push(`${c.package}: not installed`);
        continue;
      }
      c.path = join(dir, "llamapeg.node");
    }
    if (!existsSync(c.path)) {
      tried.push(`${c.path}: not found`);
      continue;
    }
    try {
      const native = requireHere(c.path) as Native;
      tried.push(`${c.path}: loaded`);
      return { native, binary: { path: c.path, source: c.source, ...(c.package ? { package: c.package } : {}) } };
    } catch (error) {
      errors.push(error);
      tried.push(`${c.path}: ${firstLine(error)}`);
    }
  }
  throw addonError(tried, override !== undefined && override !== "", errors[0]);
}

/** node-gyp-build's look-up inside this package: build/Release, build/Debug, prebuilds/. */
function localBuild(tried: string[]): string | undefined {
  const root = unpacked(packageRoot);
  try {
    const gypBuild = requireHere("node-gyp-build") as { path(dir: string): string };
    return gypBuild.path(root);
  } catch {
    tried.push(`${join(root, "build", "Release")}, ${join(root, "prebuilds", `${process.platform}-${process.arch}`)}: no llamapeg.node`);
    return undefined;
  }
}

function packageDir(name: string): string | undefined {
  try {
    return unpacked(dirname(requireHere.resolve(`${name}/package.json`)));
  } catch {
    return undefined;
  }
}

/** Electron: native files inside app.asar are loaded from app.asar.unpacked (asarUnpack). */
function unpacked(path: string): string {
  const marker = `${sep}app.asar${sep}`;
  return path.includes(marker) ? path.split(marker).join(`${sep}app.asar.unpacked${sep}`) : path;
}

function loadCpu(s: State): void {
  const files = safeReaddir(s.dir);
  const variants = files.filter((f) => f.startsWith(`${modulePrefix}cpu-`) && f.endsWith(moduleExt)).sort();
  let best: { file: string; score: number } | undefined;
  for (const file of variants) {
    try {
      const score = s.native.backendScore!(join(s.dir, file));
      s.tried.push(`${file}: score ${score ?? "none"}`);
      if (typeof score === "number" && score > 0 && (!best || score > best.score)) best = { file, score };
    } catch (error) {
      s.tried.push(`${file}: ${firstLine(error)}`);
    }
  }
  const single = `${modulePrefix}cpu${moduleExt}`;
  const chosen = best?.file ?? (files.includes(single) ? single : undefined);
  if (!chosen) {
    throw new LlamapegError(
      "ERR_NATIVE_LOAD",
      variants.length > 0
        ? `none of the CPU backends in ${s.dir} runs on this CPU (${variants.join(", ")}); a portable x64 build needs SSE4.2 at least. Tried:\n  ${s.tried.join("\n  ")}`
        : `${s.dir} has no CPU backend (${modulePrefix}cpu*${moduleExt}); rebuild with \`npm rebuild llamapeg\` or reinstall ${s.binary.package ?? "llamapeg"}`,
      { where: s.dir },
    );
  }
  const path = join(s.dir, chosen);
  try {
    const r = s.native.backendLoad!(path);
    s.loaded.set("cpu", { name: "cpu", path, devices: r.devices, registry: r.name });
    s.tried.push(`${chosen}: loaded (${r.name})`);
  } catch (error) {
    throw new LlamapegError("ERR_NATIVE_LOAD", `the CPU backend ${path} does not load: ${firstLine(error)}`, { where: path, cause: error });
  }
  s.cpuVariant = chosen === single ? "native" : chosen.slice(`${modulePrefix}cpu-`.length, -moduleExt.length);
}

/** ggml's RPC backend (remote devices, added per model) when the build has it (LLAMAPEG_RPC). */
function loadRpc(s: State): void {
  const path = join(s.dir, `${modulePrefix}rpc${moduleExt}`);
  if (!existsSync(path)) return;
  try {
    const r = s.native.backendLoad!(path);
    s.tried.push(`${path}: loaded (${r.name})`);
  } catch (error) {
    s.tried.push(`${path}: ${firstLine(error)}`);
  }
}

/** Tries the module files for one GPU backend until one loads; records every outcome. */
function tryGpu(s: State, name: Exclude<BackendName, "cpu">): void {
  if (s.loaded.has(name)) return;
  const file = `${modulePrefix}${name}${moduleExt}`;
  const places = [join(s.dir, file)];
  const pkg = `@llamapeg/${platformKey()}-${name}`;
  const dir = packageDir(pkg);
  if (dir) places.push(join(dir, file));
  let reason = "";
  for (const path of places) {
    if (!existsSync(path)) continue;
    try {
      const r = s.native.backendLoad!(path);
      s.loaded.set(name, { name, path, devices: r.devices, registry: r.name });
      s.tried.push(`${path}: loaded, ${r.devices} device(s)`);
      if (r.devices === 0) s.failed.set(name, `${path} loaded but found no device`);
      return; // registered with ggml now: a second copy of the same backend must not follow
    } catch (error) {
      reason = `${path}: ${firstLine(error)}`;
      s.tried.push(reason);
    }
  }
  if (!reason) {
    reason = `no ${file} in ${places.map(dirname).join(" or ")}` + (dir ? "" : `, and ${pkg} is not installed`);
    s.tried.push(`${name}: ${reason}`);
  }
  s.failed.set(name, reason);
}

const INSTALL_HINT: Record<Exclude<BackendName, "cpu">, string> = {
  cuda: "an NVIDIA driver, and the CUDA backend: `npm install @llamapeg/%p-cuda` (or build it: LLAMAPEG_BUILD_BACKENDS=cuda npm rebuild llamapeg, needs the CUDA toolkit)",
  vulkan: "a Vulkan driver (libvulkan.so.1 / vulkan-1.dll and your GPU's ICD), and the Vulkan backend: `npm install @llamapeg/%p-vulkan` (or LLAMAPEG_BUILD_BACKENDS=vulkan npm rebuild llamapeg)",
  metal: "macOS on Apple silicon with @llamapeg/darwin-arm64 (Metal is part of it)",
};

function backendError(s: State, name: Exclude<BackendName, "cpu">, asked: string): LlamapegError {
  const hint = INSTALL_HINT[name].replace("%p", platformKey());
  const reason = s.failed.get(name) ?? "it loaded but found no device";
  return new LlamapegError(
    "ERR_NATIVE_LOAD",
    `${asked} asks for the ${name} backend, which is not available: ${reason}.\nIt needs ${hint}.\nTried:\n  ${s.tried.join("\n  ")}`,
    { where: name },
  );
}

function addonError(tried: string[], overridden: boolean, cause: unknown): LlamapegError {
  const key = platformKey();
  const runtime = `Node ${process.versions.node}${process.versions.electron ? `, Electron ${process.versions.electron}` : ""}, ${key}`;
  const fixes = overridden
    ? ["LLAMAPEG_NATIVE_PATH points at a llamapeg.node that does not load; unset it, or point it at a build folder"]
    : [
        `install the prebuilt binaries for ${key}: \`npm install @llamapeg/${key}\` (optional dependencies must not be omitted: no --omit=optional / --no-optional)`,
        // one command that works whatever the package manager's script policy (npm 11 allowScripts,
        // pnpm 10 skips dependencies' install scripts): run the build script itself
        `or build from source: \`node "${join(packageRoot, "scripts", "build-native.mjs")}"\` (needs cmake >= 3.19, a C++17 compiler and git; \`npm rebuild llamapeg\` runs the same where install scripts are allowed)`,
      ];
  return new LlamapegError(
    "ERR_NATIVE_LOAD",
    `could not load llamapeg's native addon (${runtime}). Tried:\n  ${tried.join("\n  ")}\nTo fix:\n  ${fixes.join("\n  ")}`,
    { where: packageRoot, cause },
  );
}

function isMusl(): boolean {
  if (process.platform !== "linux") return false;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return !report?.header?.glibcVersionRuntime;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
}

/** The module file name of a backend, e.g. libggml-vulkan.so (for tests and scripts). */
export function backendFileName(name: string): string {
  return `${modulePrefix}${name}${moduleExt}`;
}
