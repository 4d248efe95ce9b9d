/** JSON and error responses. */
import type { ServerResponse } from "node:http";

import { httpErrorOf } from "./http-error.js";

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** The error as OpenAI's body with its status; returns the status. */
export function sendError(res: ServerResponse, error: unknown): number {
  const { status, body, headers } = httpErrorOf(error);
  if (res.headersSent) {
    res.destroy();
    return status;
  }
  sendJson(res, status, body, headers);
  return status;
}
