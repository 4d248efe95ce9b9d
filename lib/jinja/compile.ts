/**
 * Parsing, once per template source: our positioned lexer (lexer.ts, the library's token list
 * plus offsets) and @huggingface/jinja's parser, cached by the source's hash. Every syntax error
 * names the line and column it was found at.
 */
import { createHash } from "node:crypto";
import { parse } from "@huggingface/jinja";
import { boundedCache } from "../cache.js";
import { LlamapegError } from "../errors.js";
import type { NodeOf } from "./ast.js";
import { TemplateError, TemplateSyntaxError } from "./errors.js";
import { lineColumn } from "../line-column.js";
import { type PositionedToken, tokenize } from "./lexer.js";
import { checkSourceLength } from "./limits.js";
import { type NodePositions, nodePositions } from "./positions.js";

export interface CompiledTemplate {
  /** sha256 of the source, hex; the cache key. */
  readonly hash: string;
  /** The source as the reference sees it: CRLF/CR normalized to LF. */
  readonly source: string;
  readonly program: NodeOf<"Program">;
  /** Where each node starts in `source` (offsets). */
  readonly positions: NodePositions;
}

const cache = boundedCache<string, CompiledTemplate>(64);

export function templateHash(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

/** Parses `source` (or returns the cached parse). A syntax error is ERR_TEMPLATE_RENDER with its line and column. */
export function compileTemplate(source: string): CompiledTemplate {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "template source must be a string");
  checkSourceLength(source, () => templateHash(source));
  const hash = templateHash(source);
  const hit = cache.get(hash);
  if (hit) return hit;
  // the reference's lexer normalizes line endings before anything else
  const normalized = source.replace(/\r\n?/g, "\n");
  const syntaxError = (message: string, offset: number, cause: unknown): TemplateError =>
    new TemplateError("ERR_TEMPLATE_RENDER", `chat template has a syntax error at ${where(normalized, offset)}: ${message} (near \`${excerpt(normalized, offset)}\`)`, {
      hash,
      position: lineColumn(normalized, offset),
      cause,
    });

  let tokens: PositionedToken[];
  try {
    tokens = tokenize(normalized);
  } catch (e) {
    if (e instanceof TemplateSyntaxError) throw syntaxError(e.message, e.offset, e);
    throw e;
  }
  let program: NodeOf<"Program">;
  try {
    program = parse(tokens as never) as unknown as NodeOf<"Program">;
  } catch (first) {
    const { error: e, furthest } = parseTracked(tokens, first);
    const offset = furthest < tokens.length ? tokens[furthest]!.start : normalized.length;
    if (e instanceof RangeError) {
      throw new TemplateError("ERR_TEMPLATE_LIMIT", `chat template nests too deeply to parse (at ${where(normalized, offset)})`, {
        hash,
        position: lineColumn(normalized, offset),
        limit: "nesting",
        cause: e,
      });
    }
    // the parser runs off the token list (a TypeError) when a block is never closed
    const msg = e instanceof TypeError ? `unexpected end of template, is a block left open? (${e.message})` : e instanceof Error ? e.message : String(e);
    throw syntaxError(msg, offset, e);
  }
  const compiled: CompiledTemplate = { hash, source: normalized, program, positions: nodePositions(program, tokens) };
  cache.set(hash, compiled);
  return compiled;
}

/**
 * Parses again, watching which tokens the parser reads (it keeps no positions): the furthest
 * one is where it stopped. Only on the error path, so a good template is parsed at full speed.
 */
function parseTracked(tokens: PositionedToken[], first: unknown): { error: unknown; furthest: number } {
  let furthest = 0;
  const tracked = new Proxy(tokens, {
    get(target, key, receiver) {
      if (typeof key === "string") {
        const i = Number(key);
        if (Number.isInteger(i) && i > furthest) furthest = i;
      }
      return Reflect.get(target, key, receiver);
    },
  });
  try {
    parse(tracked as never);
  } catch (e) {
    return { error: e, furthest };
  }
  return { error: first, furthest: tokens.length };
}

/** "line L, column C" of an offset. */
export function where(source: string, offset: number): string {
  const { line, column } = lineColumn(source, offset);
  return `line ${line}, column ${column}`;
}

/** The source line around `offset`, at most 30 characters each side. */
export function excerpt(source: string, offset: number): string {
  const lineStart = source.lastIndexOf("\n", offset - 1) + 1;
  let lineEnd = source.indexOf("\n", offset);
  if (lineEnd < 0) lineEnd = source.length;
  const from = Math.max(lineStart, offset - 30);
  const to = Math.min(lineEnd, offset + 30);
  return (from > lineStart ? "…" : "") + source.slice(from, to) + (to < lineEnd ? "…" : "");
}
