/**
 * `llamapeg chat --resume FILE`: an interactive chat saved when it ends and picked up where it
 * stopped. FILE holds the conversation (JSON: the messages, the model's file name); FILE.state
 * holds the sequence's tokens and llama.cpp state (`Sequence.saveState`, checked on load: another
 * model or a damaged file is refused), so the next run's first turn decodes only what is new
 * instead of the whole history. A state that cannot be loaded costs only that: the messages are
 * kept and the history is decoded again.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

import { LlamapegError } from "../errors.js";
import type { Sequence } from "../llama/index.js";

const KIND = "llamapeg-chat-session";
const VERSION = 1;

export interface SavedChat<M> {
  messages: M[];
  /** How the state file went: loaded (its token count), none, or refused (why). */
  state: { loaded: number } | { missing: true } | { refused: string };
}

export const stateFileOf = (path: string): string => `${path}.state`;

/** Reads FILE (and loads FILE.state into `sequence`) when it exists; null when it does not. */
export async function resumeChat<M>(path: string, sequence: Sequence): Promise<SavedChat<M> | null> {
  if (!existsSync(path)) return null;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--resume ${path}: not a chat session file (${(e as Error).message})`, { where: path });
  }
  const o = data as { kind?: unknown; version?: unknown; messages?: unknown };
  if (typeof o !== "object" || o === null || o.kind !== KIND || !Array.isArray(o.messages)) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--resume ${path}: not a chat session file (no "kind": "${KIND}" with messages)`, { where: path });
  }
  if (o.version !== VERSION) throw new LlamapegError("ERR_INVALID_ARGUMENT", `--resume ${path}: session file version ${String(o.version)}; this llamapeg reads ${VERSION}`, { where: path });
  const statePath = stateFileOf(path);
  if (!existsSync(statePath)) return { messages: o.messages as M[], state: { missing: true } };
  try {
    const { tokens } = await sequence.loadState(statePath);
    return { messages: o.messages as M[], state: { loaded: tokens } };
  } catch (e) {
    if (!(e instanceof LlamapegError)) throw e;
    return { messages: o.messages as M[], state: { refused: `${e.code}: ${e.message}` } };
  }
}

/** Writes FILE (atomically: a temporary file renamed over it) and FILE.state. */
export async function saveChat(path: string, sequence: Sequence, messages: readonly unknown[]): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify({ kind: KIND, version: VERSION, model: basename(sequence.context.model.path), messages }, null, 2)}\n`);
  renameSync(tmp, path);
  await sequence.saveState(stateFileOf(path));
}
