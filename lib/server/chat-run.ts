/**
 * What every generating route shares with POST /v1/chat/completions (chat-route.ts): one slot taken
 * in arrival order, an abort when the client goes away or the server closes, the slot given back
 * once the generation has ended. The Responses, Messages and Completions routes run on this; only
 * their wire shapes differ.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { LlamapegError } from "../errors.js";
import { parseJsonBody, readBody } from "./body.js";
import type { ChatPlanner } from "../openai/plan.js";
import type { SlotPool } from "./slots.js";
import type { CompletionTarget } from "./target.js";

export interface RouteContext {
  pool: SlotPool<CompletionTarget>;
  bodyLimit: number;
  modelId: string;
  /** Aborted when the server closes. */
  shutdown: AbortSignal;
  /** Builds chat plans off the event loop (plan-worker.ts). */
  planner?: ChatPlanner;
}

/** The JSON body without `signal` (the in-process API's; over HTTP the connection is the signal). */
export async function readJsonRequest(req: IncomingMessage, ctx: RouteContext): Promise<Record<string, unknown>> {
  const body = await parseJsonBody(await readBody(req, ctx.bodyLimit));
  if ("signal" in body) delete body.signal;
  return body;
}

/**
 * Runs `fn` on `n` free slots (taken at once, in arrival order) with a signal that aborts when the
 * client closes the connection or the server shuts down; the slots are free again when `fn` has
 * settled.
 */
export async function onSlots<T>(res: ServerResponse, ctx: Pick<RouteContext, "pool" | "shutdown">, n: number, fn: (slots: CompletionTarget[], signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort(new Error("the client closed the connection"));
  };
  res.on("close", onClose);
  const onShutdown = () => abort.abort(new Error("the server is shutting down"));
  ctx.shutdown.addEventListener("abort", onShutdown, { once: true });
  try {
    const leases = await ctx.pool.acquireMany(n, abort.signal);
    try {
      return await fn(leases.map((l) => l.slot), abort.signal);
    } finally {
      for (const l of leases) l.release();
    }
  } finally {
    res.off("close", onClose);
    ctx.shutdown.removeEventListener("abort", onShutdown);
  }
}

/** `onSlots` with one slot. */
export function onSlot<T>(res: ServerResponse, ctx: Pick<RouteContext, "pool" | "shutdown">, fn: (slot: CompletionTarget, signal: AbortSignal) => Promise<T>): Promise<T> {
  return onSlots(res, ctx, 1, (slots, signal) => fn(slots[0]!, signal));
}

/**
 * A request error raised by the shared chat layer names the Chat Completions field (`messages[2]`,
 * `max_tokens`); the same error on another API names that API's field (`input[2]`,
 * `max_output_tokens`). `messages[i]...` becomes the other API's message list field as a whole: its
 * items do not map one to one onto chat messages (instructions, merged calls). Other errors pass
 * unchanged.
 */
export function renameParams(error: unknown, names: Readonly<Record<string, string>>): unknown {
  if (!(error instanceof LlamapegError) || error.where === undefined) return error;
  const where = error.where;
  const head = /^[A-Za-z_]+/.exec(where)?.[0] ?? where;
  const renamed = names[head];
  if (renamed === undefined) return error;
  const to = head === "messages" ? renamed : renamed + where.slice(head.length);
  const rest = error.message.startsWith(`${where}:`) ? error.message.slice(where.length + 1) : null;
  const message = rest === null ? error.message : head === "messages" ? `${to}: as chat ${where}:${rest}` : `${to}:${rest}`;
  return new LlamapegError(error.code, message, { where: to, cause: error });
}
