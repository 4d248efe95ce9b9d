/** `startServer` options: checked and defaulted before anything listens. */
import { isIP } from "node:net";

import { LlamapegError } from "../errors.js";
import { EmbeddingContext } from "../llama/embedding.js";

export interface ServerOptions {
  /** Default 127.0.0.1. A host that is not loopback needs `apiKey` or `allowUnauthenticated`. */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Requests must send `Authorization: Bearer <apiKey>` (GET /health excepted). */
  apiKey?: string;
  /** Serve a non-loopback host without an API key (an explicit choice; off by default). */
  allowUnauthenticated?: boolean;
  /** Largest request body in bytes. Default 8 MiB. */
  bodyLimit?: number;
  /** Requests that may wait for a slot when all are busy; past that 429. Default 64. */
  maxQueue?: number;
  /** The id served in /v1/models and echoed in responses. Default: the model's file name. */
  modelId?: string;
  /** One line per request (method, path, status, milliseconds). Default: none. */
  log?: (line: string) => void;
  /**
   * Browser cross-origin requests (any request with an `Origin` header, or `Sec-Fetch-Site`
   * cross-site / same-site): refused with 403 by default, so a web page the user visits cannot make
   * a loopback server generate. `true` allows every origin, a list allows those origins (answered
   * with CORS headers and preflight).
   */
  cors?: boolean | readonly string[];
  /** Accept `chat_template` in requests (a template is code the server runs, within budgets). Default false: 400. */
  allowRequestTemplates?: boolean;
  /** Serves POST /v1/embeddings (and, for a reranker, POST /v1/rerank) on this context; without it they answer 501. */
  embeddings?: EmbeddingContext;
}

export interface ResolvedServerOptions {
  host: string;
  port: number;
  apiKey: string | undefined;
  bodyLimit: number;
  maxQueue: number;
  modelId: string | undefined;
  log: ((line: string) => void) | undefined;
  /** null: no cross-origin requests; "*": any origin; else these origins. */
  cors: null | "*" | ReadonlySet<string>;
  allowRequestTemplates: boolean;
  embeddings: EmbeddingContext | undefined;
}

const KEYS = new Set(["host", "port", "apiKey", "allowUnauthenticated", "bodyLimit", "maxQueue", "modelId", "log", "cors", "allowRequestTemplates", "embeddings"]);

/** An origin as browsers send it: scheme://host[:port], nothing after. */
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]+$/i;

function corsOf(v: unknown): null | "*" | ReadonlySet<string> {
  if (v === undefined || v === false) return null;
  if (v === true) return "*";
  if (!Array.isArray(v) || v.length === 0) bad("cors", "expected true, false or a non-empty list of origins");
  for (const [i, o] of v.entries()) if (typeof o !== "string" || !(ORIGIN.test(o) || o === "null")) bad(`cors[${i}]`, `expected an origin like https://app.example.com, got ${JSON.stringify(o)}`);
  return new Set((v as string[]).map((o) => o.toLowerCase()));
}

/** 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^::ffff:127\./i.test(h);
  return false;
}

function bad(field: string, message: string): never {
  throw new LlamapegError("ERR_INVALID_ARGUMENT", `${field}: ${message}`, { where: field });
}

function intIn(v: unknown, field: string, fallback: number, min: number, max: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) bad(field, `expected an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  return v;
}

export function resolveServerOptions(options: ServerOptions | undefined): ResolvedServerOptions {
  const o = (options ?? {}) as Record<string, unknown>;
  if (typeof o !== "object" || o === null) bad("options", "expected an object");
  for (const k of Object.keys(o)) if (!KEYS.has(k)) bad(k, "unknown server option");
  const host = o.host === undefined ? "127.0.0.1" : typeof o.host === "string" && o.host !== "" ? o.host : bad("host", "expected a host name or address");
  if (o.apiKey !== undefined && (typeof o.apiKey !== "string" || o.apiKey === "")) bad("apiKey", "expected a non-empty string");
  if (o.allowUnauthenticated !== undefined && typeof o.allowUnauthenticated !== "boolean") bad("allowUnauthenticated", "expected a boolean");
  if (o.modelId !== undefined && (typeof o.modelId !== "string" || o.modelId === "")) bad("modelId", "expected a non-empty string");
  if (o.log !== undefined && typeof o.log !== "function") bad("log", "expected a function");
  if (o.allowRequestTemplates !== undefined && typeof o.allowRequestTemplates !== "boolean") bad("allowRequestTemplates", "expected a boolean");
  if (o.embeddings !== undefined && !(o.embeddings instanceof EmbeddingContext)) bad("embeddings", "expected an EmbeddingContext (model.createEmbeddingContext())");
  if (!isLoopback(host) && o.apiKey === undefined && o.allowUnauthenticated !== true) {
    bad("host", `${host} is reachable from other machines; set an API key (--api-key), or allow unauthenticated access explicitly (--allow-unauthenticated)`);
  }
  return {
    host,
    port: intIn(o.port, "port", 8080, 0, 65535),
    apiKey: o.apiKey as string | undefined,
    bodyLimit: intIn(o.bodyLimit, "bodyLimit", 8 * 1024 * 1024, 1, 2 ** 31 - 1),
    maxQueue: intIn(o.maxQueue, "maxQueue", 64, 0, 1_000_000),
    modelId: o.modelId as string | undefined,
    log: o.log as ((line: string) => void) | undefined,
    cors: corsOf(o.cors),
    allowRequestTemplates: o.allowRequestTemplates === true,
    embeddings: o.embeddings as EmbeddingContext | undefined,
  };
}
