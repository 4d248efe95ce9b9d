/**
 * Record / replay: a generation saved as (plan, token ids, pieces) and replayed through the parser
 * with no model and no native code, giving the same chunks and the same completion bit for bit.
 */
import { LlamapegError } from "../errors.js";
import type { GenerationStats } from "../llama/generation.js";
import { CompletionAssembler } from "./assemble.js";
import { planFromRecord, type PlanRecord } from "./plan.js";
import type { CompletionMeta } from "./shape.js";
import type { ChatCompletion, ChatCompletionChunk } from "./types.js";

export const RECORD_VERSION = 1;

export interface CompletionRecord {
  version: 1;
  meta: CompletionMeta;
  plan: PlanRecord;
  stops: string[];
  warnings: string[];
  includeUsage: boolean;
  tokens: number[];
  /** Each token's bytes, base64. */
  pieces: string[];
  /** Ids generated for calls the model gave none, by index. */
  toolCallIds: Record<number, string>;
  summary: GenerationStats;
}

export interface ReplayResult {
  chunks: ChatCompletionChunk[];
  completion: ChatCompletion;
}

/** Replays a record (an object or its JSON text) through the parser. */
export function replayCompletion(record: CompletionRecord | string): ReplayResult {
  const r = (typeof record === "string" ? JSON.parse(record) : record) as CompletionRecord;
  if (r === null || typeof r !== "object" || r.version !== RECORD_VERSION) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `not a llamapeg completion record (version ${RECORD_VERSION})`, { where: "record.version" });
  }
  if (!Array.isArray(r.tokens) || !Array.isArray(r.pieces) || r.tokens.length !== r.pieces.length) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "record.tokens and record.pieces must be arrays of the same length", { where: "record.pieces" });
  }
  const assembler = new CompletionAssembler(planFromRecord(r.plan), r.meta, { stops: r.stops, warnings: r.warnings, toolCallIds: r.toolCallIds });
  const chunks = assembler.start();
  for (let i = 0; i < r.tokens.length; i++) {
    const { chunks: c, stopped } = assembler.push(r.tokens[i]!, new Uint8Array(Buffer.from(r.pieces[i]!, "base64")));
    chunks.push(...c);
    if (stopped) break;
  }
  const end = assembler.finish(r.summary, r.includeUsage);
  chunks.push(...end.chunks);
  return { chunks, completion: end.completion };
}
