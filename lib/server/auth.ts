/** Bearer API keys, compared in constant time. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

import { HttpError } from "./http-error.js";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** A check for `Authorization: Bearer <key>` (no key configured: everything passes). */
export function bearerCheck(apiKey: string | undefined): (req: IncomingMessage) => void {
  if (apiKey === undefined) return () => {};
  const expected = digest(apiKey);
  return (req) => {
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim());
    // Hash both sides: equal lengths for timingSafeEqual, and no early exit on the key's length.
    if (m === null || !timingSafeEqual(digest(m[1]!), expected)) {
      throw new HttpError(401, "invalid_request_error", m === null ? "missing API key: send Authorization: Bearer <key>" : "incorrect API key", {
        code: "invalid_api_key",
        headers: { "www-authenticate": "Bearer" },
      });
    }
  };
}
