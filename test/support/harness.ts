/**
 * Client for the C++ reference harness (test/native/, target `llamapeg-harness`).
 *
 * `await getHarness()` builds the program if needed (once per process, under the team-wide build
 * lock) and returns one long-lived child process per vitest worker. `call(cmd, payload)` sends one
 * JSON line and resolves with `result`, or rejects with a HarnessCommandError carrying the
 * reference's own error message. Requests are pipelined: each carries an id and answers are
 * matched by id. A build failure or a crashed/hung harness is a thrown error, never a skip.
 *
 * Protocol and commands: test/support/README.md.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

import { buildHarness, harnessBinaryPath } from "./build-harness.js";

/** The answer line of the harness, as sent. */
export interface HarnessResponse<T = unknown> {
  id: number | null;
  ok: boolean;
  result?: T;
  error?: string;
}

export interface CallOptions {
  /** Milliseconds before the call fails and the process is restarted (default 30 s). */
  timeoutMs?: number;
}

/** The reference answered `ok: false`: the C++ code rejected the input (a normal outcome). */
export class HarnessCommandError extends Error {
  readonly cmd: string;
  /** The exception message from the C++ side, verbatim. */
  readonly harnessMessage: string;
  constructor(cmd: string, harnessMessage: string) {
    super(`harness command '${cmd}' failed: ${harnessMessage}`);
    this.name = "HarnessCommandError";
    this.cmd = cmd;
    this.harnessMessage = harnessMessage;
  }
}

/** The harness itself misbehaved: died, hung, or answered something that is not the protocol. */
export class HarnessProcessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HarnessProcessError";
  }
}

export interface Harness {
  /** Sends `{cmd, ...payload}`; resolves with `result`, rejects with HarnessCommandError on `ok: false`. */
  call<T = any>(cmd: string, payload?: Record<string, unknown>, options?: CallOptions): Promise<T>;
  /** Like `call`, but resolves with the whole answer, `ok: false` included. */
  request<T = any>(cmd: string, payload?: Record<string, unknown>, options?: CallOptions): Promise<HarnessResponse<T>>;
  /** Sends a raw line (for protocol tests); resolves with the answer line parsed. */
  requestRaw(line: string, options?: CallOptions): Promise<HarnessResponse>;
  /** Ends the process; a later getHarness() starts a new one. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const STDERR_TAIL_LINES = 40;

interface Pending {
  cmd: string;
  resolve: (answer: HarnessResponse) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

class HarnessProcess implements Harness {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private nextId = 1;
  private dead: string | null = null;
  private readonly exited: Promise<void>;

  constructor(binary: string) {
    this.child = spawn(binary, [], { stdio: ["pipe", "pipe", "pipe"] });
    this.exited = new Promise((resolve) => this.child.once("close", () => resolve()));
    // an idle harness must not keep a vitest worker alive; pending calls hold their own timers
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      (stream as unknown as { unref?: () => void }).unref?.();
    }

    createInterface({ input: this.child.stdout }).on("line", (line) => this.onLine(line));
    createInterface({ input: this.child.stderr }).on("line", (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      if (process.env.LLAMAPEG_HARNESS_VERBOSE) process.stderr.write(`[harness] ${line}\n`);
    });
    this.child.on("error", (error) => this.fail(`could not run ${binary}: ${error.message}`));
    this.child.on("exit", (code, signal) => {
      this.fail(`the harness exited (${signal ? `signal ${signal}` : `code ${code}`})`);
    });
    this.child.stdin.on("error", (error) => this.fail(`writing to the harness failed: ${error.message}`));
  }

  get alive(): boolean {
    return this.dead === null;
  }

  async call<T>(cmd: string, payload: Record<string, unknown> = {}, options: CallOptions = {}): Promise<T> {
    const answer = await this.request<T>(cmd, payload, options);
    if (!answer.ok) throw new HarnessCommandError(cmd, answer.error ?? "(no message)");
    return answer.result as T;
  }

  request<T>(cmd: string, payload: Record<string, unknown> = {}, options: CallOptions = {}): Promise<HarnessResponse<T>> {
    const id = this.nextId++;
    return this.send(id, cmd, JSON.stringify({ ...payload, id, cmd }), options) as Promise<HarnessResponse<T>>;
  }

  requestRaw(line: string, options: CallOptions = {}): Promise<HarnessResponse> {
    // the harness answers a line it cannot read with id null; only one raw request may be in
    // flight for its answer to be matched, so raw lines are given the reserved key -1
    if (this.pending.has(-1)) return Promise.reject(new HarnessProcessError("one raw request at a time"));
    return this.send(-1, "(raw)", line.replace(/\n/g, " "), options);
  }

  private send(id: number, cmd: string, line: string, options: CallOptions): Promise<HarnessResponse> {
    if (this.dead !== null) return Promise.reject(new HarnessProcessError(this.describe(this.dead)));
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise<HarnessResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HarnessProcessError(`harness command '${cmd}' (id ${id}) timed out after ${timeoutMs} ms`));
        // a hung harness would block every later request: end it, the next getHarness() restarts
        this.fail(`killed after '${cmd}' (id ${id}) timed out`);
        this.child.kill("SIGKILL");
      }, timeoutMs);
      this.pending.set(id, { cmd, resolve, reject, timer });
      this.child.stdin.write(line + "\n");
    });
  }

  private onLine(line: string): void {
    let answer: HarnessResponse;
    try {
      answer = JSON.parse(line) as HarnessResponse;
    } catch {
      this.fail(`the harness wrote a line that is not JSON: ${line.slice(0, 200)}`);
      this.child.kill("SIGKILL");
      return;
    }
    const key = typeof answer.id === "number" && this.pending.has(answer.id) ? answer.id : -1;
    const entry = this.pending.get(key);
    if (!entry) {
      this.fail(`the harness answered an unknown request id ${JSON.stringify(answer.id)}`);
      this.child.kill("SIGKILL");
      return;
    }
    this.pending.delete(key);
    clearTimeout(entry.timer);
    entry.resolve(answer);
  }

  private describe(reason: string): string {
    const tail = this.stderrTail.length ? `\n--- harness stderr (last lines) ---\n${this.stderrTail.join("\n")}` : "";
    return `${reason}${tail}`;
  }

  private fail(reason: string): void {
    if (this.dead !== null) return;
    this.dead = reason;
    if (current === this) current = null;
    for (const [id, entry] of this.pending) {
      clearTimeout(entry.timer);
      entry.reject(new HarnessProcessError(`harness command '${entry.cmd}' (id ${id}) got no answer: ${this.describe(reason)}`));
    }
    this.pending.clear();
  }

  async close(): Promise<void> {
    if (this.dead === null) {
      this.fail("closed");
      this.child.stdin.end();
    }
    await this.exited;
  }
}

let current: HarnessProcess | null = null;
let built: Promise<string> | null = null;

async function liveProcess(): Promise<HarnessProcess> {
  built ??= buildHarness();
  const binary = await built;
  if (current === null || !current.alive) current = new HarnessProcess(binary);
  return current;
}

/**
 * What getHarness() hands out: every call goes to the live process, started on demand, so a
 * reference crash (an abort inside llama.cpp on some input) fails the calls in flight and the next
 * call runs on a fresh process.
 */
const client: Harness = {
  async call(cmd, payload, options) {
    return (await liveProcess()).call(cmd, payload, options);
  },
  async request(cmd, payload, options) {
    return (await liveProcess()).request(cmd, payload, options);
  },
  async requestRaw(line, options) {
    return (await liveProcess()).requestRaw(line, options);
  },
  async close() {
    const proc = current;
    current = null;
    await proc?.close();
  },
};

/**
 * The harness of this worker: built on first use (a failed build rejects, with the build log),
 * started once, restarted after it died or timed out.
 */
export async function getHarness(): Promise<Harness> {
  await liveProcess();
  return client;
}

export { harnessBinaryPath };
