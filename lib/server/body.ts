/**
 * The request body: size limited before anything is parsed (a Content-Length over the limit is
 * refused without reading; a body that grows past it is cut off), then JSON with errors that give
 * the line and column.
 */
import type { IncomingMessage } from "node:http";

import { findJsonSyntaxError, lineColumn } from "../cli/json-syntax.js";
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

export function parseJsonBody(bytes: Buffer): Record<string, unknown> {
  const text = bytes.toString("utf8");
  if (text.trim() === "") throw new HttpError(400, "invalid_request_error", "the request body is empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const err = findJsonSyntaxError(text) ?? { offset: 0, message: "not valid JSON" };
    const { line, column } = lineColumn(text, err.offset);
    throw new HttpError(400, "invalid_request_error", `the request body is not valid JSON: ${err.message} at line ${line}, column ${column}`, { code: "invalid_json" });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new HttpError(400, "invalid_request_error", "the request body must be a JSON object");
  return value as Record<string, unknown>;
}
