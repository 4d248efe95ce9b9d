/**
 * Builds the reference harness on demand: skips the build when the binary is newer than its
 * inputs, otherwise builds the `llamapeg-harness` target (`cmake --build build` when build/ is
 * configured, else `scripts/build-native.mjs --target llamapeg-harness`) under the same build lock
 * the team uses (`flock /tmp/llamapeg-build.lock`), so several vitest workers starting at once build
 * it once and never run two native builds together.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const LOCK_FILE = process.env.LLAMAPEG_BUILD_LOCK ?? join(tmpdir(), "llamapeg-build.lock");
const TARGET = "llamapeg-harness";

/** Where the build puts the program (set by RUNTIME_OUTPUT_DIRECTORY in test/native/CMakeLists.txt). */
export function harnessBinaryPath(): string {
  if (process.env.LLAMAPEG_HARNESS_BIN) return resolve(process.env.LLAMAPEG_HARNESS_BIN);
  return join(root, "build", "test-native", process.platform === "win32" ? `${TARGET}.exe` : TARGET);
}

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** True when the binary exists and nothing it is built from changed after it. */
export function harnessIsFresh(): boolean {
  const binary = harnessBinaryPath();
  if (!existsSync(binary)) return false;
  const built = statSync(binary).mtimeMs;
  const inputs = [
    join(root, "test", "native"),
    join(root, "CMakeLists.txt"),
    join(root, "vendor", "llama.cpp.json"),
    // a re-vendored tree is a fresh clone: its common/ directory and files get new mtimes
    join(root, "vendor", "llama.cpp", "common"),
  ];
  return inputs.every((input) => newestMtime(input) <= built);
}

interface Run {
  code: number | null;
  output: string;
  spawnError?: NodeJS.ErrnoException;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LLAMAPEG_QUIET: "1" } });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (process.env.LLAMAPEG_HARNESS_VERBOSE) process.stderr.write(chunk);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", (error: NodeJS.ErrnoException) => resolvePromise({ code: null, output, spawnError: error }));
    child.on("close", (code) => resolvePromise({ code, output }));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where `flock` is missing (macOS): a directory lock next to the lock file; stale after an hour. */
async function withDirLock<T>(fn: () => Promise<T>): Promise<T> {
  const dir = `${LOCK_FILE}.d`;
  for (;;) {
    try {
      mkdirSync(dir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (Date.now() - statSync(dir).mtimeMs > 3_600_000) rmdirSync(dir);
      else await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    rmdirSync(dir);
  }
}

/** Builds the harness if it is missing or stale; resolves with the binary path. */
export async function buildHarness(): Promise<string> {
  const binary = harnessBinaryPath();
  if (process.env.LLAMAPEG_HARNESS_BIN) {
    if (!existsSync(binary)) throw new Error(`LLAMAPEG_HARNESS_BIN=${binary} does not exist`);
    return binary;
  }
  if (!process.env.LLAMAPEG_HARNESS_REBUILD && harnessIsFresh()) return binary;

  const started = Date.now();
  process.stderr.write(`[harness] building ${TARGET} (waits for ${LOCK_FILE})...\n`);
  // Once build/ is configured, drive it with `cmake --build`: on a failed build `cmake-js compile`
  // deletes build/ and rebuilds llama.cpp from scratch, which a typo in test/native/ must not cause.
  const configured = existsSync(join(root, "build", "CMakeCache.txt"));
  const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
  const [command, args]: [string, string[]] = configured
    ? ["cmake", ["--build", join(root, "build"), "--target", TARGET, "--parallel", jobs]]
    : [process.execPath, [join(root, "scripts", "build-native.mjs"), "--target", TARGET]];
  let result = await run("flock", [LOCK_FILE, command, ...args]);
  if (result.spawnError?.code === "ENOENT") {
    result = await withDirLock(() => run(command, args));
  }
  if (result.spawnError) throw new Error(`could not start the harness build: ${result.spawnError.message}`);
  if (result.code !== 0 || !existsSync(binary)) {
    const tail = result.output.split("\n").slice(-80).join("\n");
    throw new Error(
      `building the reference harness failed (exit ${result.code}); ` +
        `run \`flock ${LOCK_FILE} ${command === "cmake" ? "cmake --build build" : "node scripts/build-native.mjs"} --target ${TARGET}\` to see why.\n${tail}`,
    );
  }
  process.stderr.write(`[harness] ${TARGET} ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return binary;
}
