/**
 * Who may call: bearer API keys (compared in constant time), and which browser origins. A web page
 * can POST `text/plain` to a loopback server without a preflight, so by default any request a
 * browser marks as cross-origin (an `Origin` header, `Sec-Fetch-Site: cross-site|same-site`) is
 * refused; `cors` allows origins by name (or all) and answers their preflight.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

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

export interface OriginPolicy {
  /**
   * Throws 403 for a browser request from an origin not allowed; returns the CORS headers to send
   * (none for a request that is not cross-origin).
   */
  check(req: IncomingMessage): Record<string, string>;
  /** Answers a CORS preflight (OPTIONS with Access-Control-Request-Method); false: not one. */
  preflight(req: IncomingMessage, res: ServerResponse): boolean;
}

function forbidden(origin: string | undefined): HttpError {
  return new HttpError(403, "invalid_request_error", `cross-origin requests are refused${origin !== undefined ? ` (Origin: ${JSON.stringify(origin.slice(0, 200))})` : ""}; start the server with --cors to allow browser origins`, { code: "cross_origin_forbidden" });
}

export function originPolicy(cors: null | "*" | ReadonlySet<string>): OriginPolicy {
  const allowed = (origin: string): boolean => cors === "*" || (cors !== null && cors.has(origin.toLowerCase()));
  const headersFor = (origin: string): Record<string, string> => ({ "access-control-allow-origin": cors === "*" ? "*" : origin, vary: "Origin" });
  return {
    check(req) {
      const origin = req.headers.origin;
      const site = req.headers["sec-fetch-site"];
      if (origin === undefined) {
        // A browser request without Origin (a cross-site GET) still says where it came from.
        if ((site === "cross-site" || site === "same-site") && cors === null) throw forbidden(undefined);
        return {};
      }
      if (!allowed(origin)) throw forbidden(origin);
      return headersFor(origin);
    },
    preflight(req, res) {
      if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined) return false;
      const origin = req.headers.origin;
      if (origin === undefined || !allowed(origin)) throw forbidden(origin);
      res.writeHead(204, {
        ...headersFor(origin),
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "authorization, content-type",
        "access-control-max-age": "600",
      });
      res.end();
      return true;
    },
  };
}
