/**
 * Chat plans for the server, built off its event loop: template render, analysis, parser tree and
 * grammar for a request run on one worker thread (plan-worker-main.ts), so a cold plan for a large
 * tool set or a slow client template never holds up /health or the other connections' streams
 * (issue 28.5: 128 tools stalled the loop 2.7 s). The in-process API plans on its caller's thread,
 * as before; this is the `planner` the server's routes pass to createChatCompletion.
 *
 * - One thread, plans one after another in arrival order (generation is the scarce part; a plan
 *   for a warm request shape comes from the thread's own plan cache in well under a millisecond).
 * - The thread's heap is bounded: a request that would exhaust it gets ERR_TEMPLATE_LIMIT (a 400),
 *   the thread is replaced, the server lives on.
 * - Errors come back as they were thrown (LlamapegError code, message and `where`; RangeError).
 * - Without a worker file next to this one (the TypeScript sources, in tests), plans are built
 *   inline, as the in-process API builds them (LLAMAPEG_PLAN_THREAD_TS=1: on the thread even then).
 */
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";

import { applyNormalized, type AppliedChatPlan, type NormalizedApplyRequest } from "../chat/apply/index.js";
import { LlamapegError, internalError } from "../errors.js";
import { markGbnfChecked } from "../gbnf/checked.js";
import type { CompletionOptions, PlannedCompletionOptions } from "../openai/completion.js";
import type { ChatPlanner } from "../openai/plan.js";
import { PegArena } from "../peg/arena.js";
import { ARENAS_KEPT, type ArenaData, type PlanReply, type PlanRequest, type WorkerError } from "./plan-protocol.js";

/** Heap of the planning thread: far above any accepted request's plan (openai/request-limits.ts). */
const HEAP_MB = 1536;

interface Pending {
  msg: PlanRequest;
  resolve: (plan: AppliedChatPlan) => void;
  reject: (e: unknown) => void;
}

function workerEntry(): { url: URL; execArgv: string[] } | null {
  const js = new URL("./plan-worker-main.js", import.meta.url);
  if (existsSync(fileURLToPath(js))) return { url: js, execArgv: [] };
  // The TypeScript sources (tests) plan inline, unless a test asks for the thread: it then runs
  // the sources through the repository's .ts loader, which takes seconds to start on a busy machine.
  if (process.env.LLAMAPEG_PLAN_THREAD_TS !== "1") return null;
  const ts = new URL("./plan-worker-main.ts", import.meta.url);
  const loader = new URL("../../test/fuzz/ts-register.mjs", import.meta.url);
  if (existsSync(fileURLToPath(ts)) && existsSync(fileURLToPath(loader))) return { url: ts, execArgv: ["--import", pathToFileURL(fileURLToPath(loader)).href] };
  return null;
}

function errorFrom(e: WorkerError): Error {
  if (e.kind === "llamapeg") return new LlamapegError(e.code, e.message, e.where !== undefined ? { where: e.where } : undefined);
  if (e.kind === "range") return new RangeError(e.message);
  return internalError(`planning failed unexpectedly: ${e.message}`, "applyChatTemplate");
}

/** Completion options that plan with `planner` (the field is not in the public CompletionOptions). */
export function plannedOptions(planner: ChatPlanner | undefined, options: CompletionOptions = {}): CompletionOptions {
  const planned: PlannedCompletionOptions = planner === undefined ? options : { ...options, planner };
  return planned;
}

export class PlanWorker {
  #worker: Worker | null = null;
  readonly #entry = workerEntry();
  readonly #pending = new Map<number, Pending>();
  /** Arenas received, least recently used first (mirrors the thread's list of sent ones). */
  readonly #arenas = new Map<number, PegArena>();
  #next = 1;
  #closed = false;

  /** Whether plans run on the worker thread (false: inline, no worker file found). */
  get offThread(): boolean {
    return this.#entry !== null;
  }

  /** Starts the thread now (in the background), so the first request does not wait for it. */
  warm(): void {
    if (this.#entry !== null && !this.#closed) this.#thread();
  }

  readonly planner: ChatPlanner = (template, req) => this.plan(template, req);

  plan(template: string, req: NormalizedApplyRequest): Promise<AppliedChatPlan> {
    if (this.#entry === null || this.#closed) return Promise.resolve().then(() => applyNormalized(template, req));
    return new Promise((resolve, reject) => {
      const msg: PlanRequest = { id: this.#next++, template, req };
      this.#pending.set(msg.id, { msg, resolve, reject });
      this.#post(msg, reject);
    });
  }

  #post(msg: PlanRequest, reject: (e: unknown) => void): void {
    try {
      this.#thread().postMessage(msg);
    } catch {
      // not cloneable (a caller's function in the request): the same request, planned here
      const p = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      Promise.resolve()
        .then(() => applyNormalized(msg.template, msg.req as NormalizedApplyRequest))
        .then((plan) => p?.resolve(plan), reject);
    }
  }

  #thread(): Worker {
    if (this.#worker !== null) return this.#worker;
    const entry = this.#entry!;
    const worker = new Worker(entry.url, { execArgv: entry.execArgv, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB }, stdout: false, stderr: false });
    worker.unref(); // an idle planner keeps no process alive
    worker.on("message", (reply: PlanReply) => this.#onReply(reply));
    worker.on("error", (e: Error & { code?: string }) => this.#onExit(worker, e));
    worker.on("exit", (code) => this.#onExit(worker, new Error(`the planning thread exited with code ${code}`)));
    this.#worker = worker;
    this.#arenas.clear();
    return worker;
  }

  #onReply(reply: PlanReply): void {
    const p = this.#pending.get(reply.id);
    if (p === undefined) return;
    if (reply.error !== undefined) {
      this.#pending.delete(reply.id);
      p.reject(errorFrom(reply.error));
      return;
    }
    const parser = this.#arena(reply.arena);
    if (parser === undefined) {
      // lost on this side: ask again with the nodes
      p.msg = { ...p.msg, resend: true };
      this.#post(p.msg, p.reject);
      return;
    }
    this.#pending.delete(reply.id);
    if (reply.grammarChecked && reply.plan.grammar !== null) markGbnfChecked(reply.plan.grammar.gbnf);
    p.resolve({ ...reply.plan, parser });
  }

  /** The arena a reply names: built from its nodes, or the one kept under its id; touched as the thread touched it. */
  #arena(a: ArenaData): PegArena | undefined {
    let arena = this.#arenas.get(a.id);
    if (a.nodes !== undefined) arena = new PegArena(a.nodes, a.rules!, a.root!);
    this.#arenas.delete(a.id);
    if (arena === undefined) return undefined;
    this.#arenas.set(a.id, arena);
    if (this.#arenas.size > ARENAS_KEPT) this.#arenas.delete(this.#arenas.keys().next().value!);
    return arena;
  }

  #onExit(worker: Worker, e: Error & { code?: string }): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    void worker.terminate();
    const error =
      e.code === "ERR_WORKER_OUT_OF_MEMORY"
        ? new LlamapegError("ERR_TEMPLATE_LIMIT", `planning this request needed more than the planning thread's ${HEAP_MB} MiB heap`, { where: "messages" })
        : internalError(`the planning thread failed: ${e.message}`, "applyChatTemplate");
    // Every plan in flight was on the lost thread; the next request starts a new one.
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(error);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(new LlamapegError("ERR_ABORTED", "the server is shutting down"));
    if (worker !== null) await worker.terminate();
  }
}
