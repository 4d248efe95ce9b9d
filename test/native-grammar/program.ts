/**
 * The grammar test program (test/native-grammar/main.cpp, target `llamapeg-grammar-test`): built on
 * demand under the team's build lock when missing or older than its sources (test/native-grammar,
 * native/grammar, native/sampling*, CMakeLists.txt, the vendored llama.cpp), then driven over JSON lines. A build
 * failure or a crash is a thrown error, never a skip. It links the llama library the addon build
 * already compiled, so a build is our grammar sources and one driver (well under a minute).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TARGET = "llamapeg-grammar-test";
const LOCK_FILE = process.env.LLAMAPEG_BUILD_LOCK ?? join(tmpdir(), "llamapeg-build.lock");
export const VOCABS = join(ROOT, "vendor", "llama.cpp", "models");

export function vocabPath(name: string): string {
  return join(VOCABS, `ggml-vocab-${name}.gguf`);
}

function binaryPath(): string {
  return join(ROOT, "build", "test-native", TARGET);
}

function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let n = st.mtimeMs;
  for (const entry of readdirSync(path)) n = Math.max(n, newest(join(path, entry)));
  return n;
}

function fresh(): boolean {
  const bin = binaryPath();
  if (!existsSync(bin)) return false;
  const built = statSync(bin).mtimeMs;
  const inputs = [
    join(ROOT, "test", "native-grammar"),
    join(ROOT, "native", "grammar"),
    ...readdirSync(join(ROOT, "native"))
      .filter((f) => f.startsWith("sampling") || f === "native-error.h")
      .map((f) => join(ROOT, "native", f)),
    join(ROOT, "CMakeLists.txt"),
    join(ROOT, "vendor", "llama.cpp.json"),
  ];
  return inputs.every((p) => newest(p) <= built);
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", (e) => done({ code: null, output: output + String(e) }));
    child.on("close", (code) => done({ code, output }));
  });
}

let building: Promise<string> | null = null;

export function buildProgram(): Promise<string> {
  building ??= (async () => {
    if (fresh()) return binaryPath();
    const configured = existsSync(join(ROOT, "build", "CMakeCache.txt"));
    const jobs = process.env.LLAMAPEG_JOBS ?? String(availableParallelism());
    // `cmake --build` once build/ exists: cmake-js answers a failed build by wiping build/.
    const [command, args] = configured
      ? ["cmake", ["--build", join(ROOT, "build"), "--target", TARGET, "--parallel", jobs]]
      : [process.execPath, [join(ROOT, "scripts", "build-native.mjs"), "--target", TARGET]];
    let r = await run("flock", [LOCK_FILE, command as string, ...(args as string[])]);
    if (r.code === null && /ENOENT/.test(r.output)) r = await run(command as string, args as string[]);
    if (r.code !== 0 || !existsSync(binaryPath())) {
      throw new Error(`building ${TARGET} failed (exit ${r.code}):\n${r.output.split("\n").slice(-60).join("\n")}`);
    }
    return binaryPath();
  })();
  return building;
}

export class GrammarProgram {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private stderr = "";
  private dead: string | null = null;

  private constructor(binary: string) {
    this.child = spawn(binary, [], { stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      let answer: { id: number; ok: boolean; result?: unknown; error?: string };
      try {
        answer = JSON.parse(line) as typeof answer;
      } catch {
        this.fail(`${TARGET} wrote a line that is not JSON: ${line.slice(0, 300)}`);
        return;
      }
      // id null: the program could not read the request line (one request is in flight at a time)
      const w = this.waiting.get(answer.id) ?? (answer.id === null && this.waiting.size === 1 ? [...this.waiting.values()][0] : undefined);
      if (!w) return;
      for (const [k, v] of this.waiting) if (v === w) this.waiting.delete(k);
      if (answer.ok) w.resolve(answer.result);
      else w.reject(new Error(`${TARGET}: ${answer.error}`));
    });
    this.child.stderr.on("data", (c: Buffer) => {
      this.stderr = (this.stderr + c.toString()).slice(-4000);
    });
    this.child.on("exit", (code, signal) => this.fail(`${TARGET} exited (${signal ?? code})`));
  }

  private fail(reason: string): void {
    if (this.dead) return;
    this.dead = `${reason}\n${this.stderr}`;
    for (const w of this.waiting.values()) w.reject(new Error(this.dead));
    this.waiting.clear();
    this.child.kill("SIGKILL");
  }

  static async start(): Promise<GrammarProgram> {
    return new GrammarProgram(await buildProgram());
  }

  /** One command; `timeoutMs` (default 10 min) ends the program if it does not answer. */
  call<T = any>(cmd: string, payload: Record<string, unknown>, timeoutMs = 600_000): Promise<T> {
    if (this.dead) return Promise.reject(new Error(this.dead));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(`${cmd} (id ${id}) got no answer in ${timeoutMs} ms`), timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          (resolve as (v: unknown) => void)(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.stdin.write(JSON.stringify({ ...payload, id, cmd }) + "\n");
    });
  }

  async close(): Promise<void> {
    if (this.dead) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.stdin.end();
    await exited;
  }
}

/** What mask.diff and trigger.diff answer. */
export interface DiffResult {
  states: number;
  maskMismatches: number;
  stackMismatches: number;
  admitsMismatches: number;
  acceptMismatches: number;
  /** mask.diff: cache entries taken from earlier grammars' (native/grammar/shared-entries.h) */
  sharedHits?: number;
  /** mask.diff: entries taken from another position of the same grammar, keyed by its lower frames' addresses */
  localHits?: number;
  triggerMismatches?: number;
  triggered?: number;
  triggerAt?: number[];
  oursMs: number;
  referenceMs: number;
  mismatches: unknown[];
  invalid?: string;
}
