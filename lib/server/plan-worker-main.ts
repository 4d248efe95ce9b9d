/**
 * The server's planning thread (see plan-worker.ts): builds chat plans with `applyNormalized`, as
 * the in-process API does on its caller's thread, and posts them back with the parser arena as
 * plain data. An arena already sent is sent as its id only (the plan cache hands the same arena to
 * every request of one shape); the main thread keeps the arenas it got, in the same order.
 */
import { parentPort } from "node:worker_threads";

import { applyNormalized } from "../chat/apply/index.js";
import type { NormalizedApplyRequest } from "../chat/apply/index.js";
import { LlamapegError } from "../errors.js";
import { checkGbnf } from "../gbnf/check.js";
import type { PegArena } from "../peg/arena.js";
import { ARENAS_KEPT, type PlanReply, type PlanRequest, type WorkerError } from "./plan-protocol.js";

const ids = new WeakMap<PegArena, number>();
/** Ids the main thread holds, least recently used first (the same order as its own). */
const sent = new Map<number, true>();
let nextId = 1;

function errorOf(e: unknown): WorkerError {
  if (e instanceof LlamapegError) return { kind: "llamapeg", code: e.code, message: e.message, ...(e.where !== undefined ? { where: e.where } : {}) };
  if (e instanceof RangeError) return { kind: "range", message: e.message };
  return { kind: "other", message: String((e as Error)?.message ?? e) };
}

/** The plan's grammar passes the check generate() makes (done here, off the event loop). */
function grammarPasses(gbnf: string): boolean {
  if (gbnf.trim() === "") return false;
  try {
    checkGbnf(gbnf, { root: "root" });
    return true;
  } catch {
    return false; // generate() finds and reports it
  }
}

parentPort!.on("message", (m: PlanRequest) => {
  let reply: PlanReply;
  try {
    const { parser, ...plan } = applyNormalized(m.template, m.req as NormalizedApplyRequest);
    let id = ids.get(parser);
    if (id === undefined) ids.set(parser, (id = nextId++));
    const known = sent.has(id) && !m.resend;
    sent.delete(id);
    sent.set(id, true);
    if (sent.size > ARENAS_KEPT) sent.delete(sent.keys().next().value!);
    reply = { id: m.id, plan, grammarChecked: plan.grammar !== null && grammarPasses(plan.grammar.gbnf), arena: known ? { id } : { id, nodes: parser.nodes, rules: parser.rules, root: parser.root } };
  } catch (e) {
    reply = { id: m.id, error: errorOf(e) };
  }
  parentPort!.postMessage(reply);
});
