/**
 * The request body: size limited before anything is parsed (a Content-Length over the limit is
 * refused without reading; a body that grows past it is cut off), then JSON with errors that give
 * the line and column.
 */
import type { IncomingMessage } from "node:http";

import { findJsonSyntaxError, lineColumn } from "../json-syntax.js";
import { HttpError } from "./http-error.js";

function tooLarge(limit: number): HttpError {
  return new HttpError(413, "invalid_request_error", `the request body is over the limit of ${limit} bytes`, { code: "request_too_large" });
}

/**
 * The body, at most `limit` bytes. Past the limit the rest is read and dropped (up to `drainLimit`,
 * then the connection is cut) so that the client, still sending, receives the 413.
 */
export function readBody(req: IncomingMessage, limit: number, drainLimit = Math.max(limit * 4, 16 * 1024 * 1024)): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = req.headers["content-length"];
    let over = declared !== undefined && Number(declared) > limit;
    const chunks: Buffer[] = [];
    let size = 0;
    if (over) reject(tooLarge(limit));
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size > limit) {
        over = true;
        chunks.length = 0;
        reject(tooLarge(limit));
      }
      if (over) {
        if (size > drainLimit) req.socket.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks, size));
    });
    req.on("error", reject);
  });
}

/**
 * Deepest nesting accepted in a body: above the 256 levels a schema may have (json-schema's own
 * documented check, reached under tools[i].function.parameters), far below what would overflow
 * the stack of the code that walks requests recursively.
 */
export const MAX_BODY_DEPTH = 512;

/**
 * The byte offset where the JSON text first nests deeper than `max` (brackets outside strings),
 * or -1. A linear scan before JSON.parse: V8 takes a second to refuse a megabyte of "[", and the
 * code that walks requests recursively must never meet a value deeper than the limit.
 */
export function nestingPastLimit(bytes: Uint8Array, max: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > max) return i;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return -1;
}

/** Bodies above this size are checked, decoded and parsed in separate turns of the event loop. */
const YIELD_ABOVE = 256 * 1024;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The request body as a JSON object, or a 400 naming what is wrong. A large body (up to the 8 MiB
 * limit: ~10 ms of scan, ~20 ms of decoding, ~40 ms of JSON.parse here) takes the three steps in
 * separate turns of the event loop, so `/health` and other requests are answered between them.
 */
export async function parseJsonBody(bytes: Buffer): Promise<Record<string, unknown>> {
  const large = bytes.length > YIELD_ABOVE;
  const deep = nestingPastLimit(bytes, MAX_BODY_DEPTH);
  if (deep >= 0) throw new HttpError(400, "invalid_request_error", `the request body nests deeper than ${MAX_BODY_DEPTH} levels (at byte ${deep})`, { code: "request_too_complex" });
  if (large) await nextTurn();
  const text = bytes.toString("utf8");
  if (/^\s*$/.test(text)) throw new HttpError(400, "invalid_request_error", "the request body is empty; expected a JSON object");
  if (large) await nextTurn();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    let err: { offset: number; message: string } | null = null;
    try {
      err = findJsonSyntaxError(text);
    } catch {
      // the position finder recurses; a body nested past the stack gets no position
    }
    err ??= { offset: 0, message: "not valid JSON" };
    const { line, column } = lineColumn(text, err.offset);
    throw new HttpError(400, "invalid_request_error", `the request body is not valid JSON: ${err.message} at line ${line}, column ${column}`, { code: "invalid_json" });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new HttpError(400, "invalid_request_error", "the request body must be a JSON object");
  return value as Record<string, unknown>;
}
