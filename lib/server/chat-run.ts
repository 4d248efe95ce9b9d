/**
 * What every generating route shares with POST /v1/chat/completions (chat-route.ts): one slot taken
 * in arrival order, an abort when the client goes away or the server closes, the slot given back
 * once the generation has ended. The Responses, Messages and Completions routes run on this; only
 * their wire shapes differ.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { LlamapegError } from "../errors.js";
import { parseJsonBody, readBody } from "./body.js";
import type { SlotPool } from "./slots.js";
import type { CompletionTarget } from "./target.js";

export interface RouteContext {
  pool: SlotPool<CompletionTarget>;
  bodyLimit: number;
  modelId: string;
  /** Aborted when the server closes. */
  shutdown: AbortSignal;
}

/** The JSON body without `signal` (the in-process API's; over HTTP the connection is the signal). */
export async function readJsonRequest(req: IncomingMessage, ctx: RouteContext): Promise<Record<string, unknown>> {
  const body = parseJsonBody(await readBody(req, ctx.bodyLimit));
  if ("signal" in body) delete body.signal;
  return body;
}

/**
 * Runs `fn` on a free slot with a signal that aborts when the client closes the connection or the
 * server shuts down; the slot is free again when `fn` has settled.
 */
export async function onSlot<T>(res: ServerResponse, ctx: RouteContext, fn: (slot: CompletionTarget, signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort(new Error("the client closed the connection"));
  };
  res.on("close", onClose);
  const onShutdown = () => abort.abort(new Error("the server is shutting down"));
  ctx.shutdown.addEventListener("abort", onShutdown, { once: true });
  try {
    const lease = await ctx.pool.acquire(abort.signal);
    try {
      return await fn(lease.slot, abort.signal);
    } finally {
      lease.release();
    }
  } finally {
    res.off("close", onClose);
    ctx.shutdown.removeEventListener("abort", onShutdown);
  }
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
