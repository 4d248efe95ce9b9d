/**
 * Anthropic's clients send the API key as `x-api-key` (or, with `authToken`, as a Bearer token):
 * the same key rule as every other route, read from either header.
 */
import type { IncomingMessage } from "node:http";

export function anthropicKey(req: IncomingMessage): IncomingMessage {
  const key = req.headers["x-api-key"];
  if (req.headers.authorization !== undefined || typeof key !== "string") return req;
  // Only the headers are read by the key check.
  return { headers: { ...req.headers, authorization: `Bearer ${key}` } } as IncomingMessage;
}
