/**
 * Parsing, once per template source: @huggingface/jinja's lexer (lstrip_blocks + trim_blocks, the
 * chat-template defaults the reference uses too) and parser, cached by the source's hash.
 */
import { createHash } from "node:crypto";
import { Template } from "@huggingface/jinja";
import { LlamapegError } from "../../errors.js";
import type { NodeOf } from "./ast.js";

export interface CompiledTemplate {
  /** sha256 of the source, hex; the cache key. */
  readonly hash: string;
  /** The source as the reference sees it: CRLF/CR normalized to LF. */
  readonly source: string;
  readonly program: NodeOf<"Program">;
}

const CACHE_LIMIT = 64;
const cache = new Map<string, CompiledTemplate>();

export function templateHash(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

/** Parses `source` (or returns the cached parse). A syntax error is ERR_TEMPLATE_RENDER. */
export function compileTemplate(source: string): CompiledTemplate {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "template source must be a string");
  const hash = templateHash(source);
  const hit = cache.get(hash);
  if (hit) {
    // keep recently used entries at the back of the Map (LRU order)
    cache.delete(hash);
    cache.set(hash, hit);
    return hit;
  }
  // the reference's lexer normalizes line endings before anything else
  const normalized = source.replace(/\r\n?/g, "\n");
  let program: NodeOf<"Program">;
  try {
    program = new Template(normalized).parsed as unknown as NodeOf<"Program">;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new LlamapegError("ERR_TEMPLATE_RENDER", `chat template has a syntax error: ${msg}`, {
      where: `template ${hash.slice(0, 12)}`,
      cause: e,
    });
  }
  const compiled: CompiledTemplate = { hash, source: normalized, program };
  cache.set(hash, compiled);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return compiled;
}
