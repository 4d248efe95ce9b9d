/**
 * `startServer(targets, options)`: an OpenAI-compatible HTTP server on node:http over completion
 * targets (one slot each): POST /v1/chat/completions (stream and not), GET /v1/models,
 * GET /v1/models/{id}, GET /health. The paths without /v1 are accepted too, as llama-server does.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { LlamapegError, ArgumentRangeError } from "../errors.js";
import { completionTarget } from "../openai/index.js";
import { bearerCheck, originPolicy } from "./auth.js";
import { anthropicKey } from "./anthropic-key.js";
import { chatCompletions } from "./chat-route.js";
import { HttpError } from "./http-error.js";
import { messages } from "./messages-route.js";
import { getModel, listModels, modelEntry } from "./models-route.js";
import { resolveServerOptions, type ServerOptions } from "./options.js";
import { sendError, sendJson } from "./respond.js";
import { completions } from "./completions-route.js";
import { ServerMetrics, sendMetrics } from "./metrics.js";
import { responses } from "./responses-route.js";
import { detokenize, localModel, tokenize } from "./tokenize-route.js";
import { embeddings, rerank } from "./embeddings-route.js";
import { ResponseStore } from "../openai/responses/index.js";
import { modelTokenInfo } from "../chat/prompt.js";
import { PlanWorker } from "./plan-worker.js";
import { SlotPool } from "./slots.js";
import type { CompletionTarget } from "./target.js";

export interface LlamapegServer {
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops listening, aborts running generations, fails queued requests; the targets stay the caller's. */
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, match: RegExpExecArray) => Promise<number> | number;

interface Route {
  method: "GET" | "POST";
  path: RegExp;
  /** Without authentication (health checks from a load balancer). */
  public?: boolean;
  handler: Handler;
  /** Where the route's clients put the API key, as a request whose Authorization header holds it. */
  credentials?: (req: IncomingMessage) => IncomingMessage;
}

/** A percent-encoded path segment; bad encoding is the client's 400, not a URIError. */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new HttpError(400, "invalid_request_error", `the path has bad percent-encoding: ${JSON.stringify(part.slice(0, 200))}`, { code: "invalid_path" });
  }
}

export async function startServer(targets: CompletionTarget | readonly CompletionTarget[], options?: ServerOptions): Promise<LlamapegServer> {
  const o = resolveServerOptions(options);
  const given = Array.isArray(targets) ? [...(targets as readonly CompletionTarget[])] : [targets as CompletionTarget];
  if (given.length === 0) throw new ArgumentRangeError("startServer needs at least one completion target");
  // Every slot's generations are counted for /metrics.
  const metrics = new ServerMetrics();
  const slots: CompletionTarget[] = given.map((t) => metrics.tap(t));
  const model = localModel(given[0]);
  // The vocabulary walk the prompt tokenizer needs once per model, now rather than in a request.
  if (model !== null) modelTokenInfo(model);
  const modelId = o.modelId ?? (await completionTarget(slots[0]!).chatInfo()).name.replace(/\.gguf$/i, "");
  const entry = modelEntry(modelId, Math.floor(Date.now() / 1000));
  const pool = new SlotPool(slots, o.maxQueue);
  const shutdown = new AbortController();
  const authorize = bearerCheck(o.apiKey);
  // Chat plans are built on a worker thread: a cold one never blocks /health (plan-worker.ts).
  const planWorker = new PlanWorker();
  planWorker.warm();
  const planner = planWorker.planner;
  const routeContext = { pool, bodyLimit: o.bodyLimit, modelId, shutdown: shutdown.signal, planner };
  const store = new ResponseStore();
  const origins = originPolicy(o.cors);

  const routes: Route[] = [
    { method: "POST", path: /^\/(?:v1\/)?chat\/completions$/, handler: (req, res) => chatCompletions(req, res, { pool, bodyLimit: o.bodyLimit, modelId, shutdown: shutdown.signal, allowRequestTemplates: o.allowRequestTemplates, planner }) },
    { method: "POST", path: /^\/(?:v1\/)?responses$/, handler: (req, res) => responses(req, res, { ...routeContext, store }) },
    { method: "POST", path: /^\/(?:v1\/)?messages$/, handler: (req, res) => messages(req, res, routeContext), credentials: anthropicKey },
    { method: "POST", path: /^\/(?:v1\/)?completions$/, handler: (req, res) => completions(req, res, routeContext) },
    { method: "POST", path: /^\/tokenize$/, handler: (req, res) => tokenize(req, res, routeContext, model) },
    { method: "POST", path: /^\/detokenize$/, handler: (req, res) => detokenize(req, res, routeContext, model) },
    { method: "POST", path: /^\/(?:v1\/)?embeddings$/, handler: (req, res) => embeddings(req, res, { ...routeContext, embeddings: o.embeddings }) },
    { method: "POST", path: /^\/(?:v1\/)?rerank$/, handler: (req, res) => rerank(req, res, { ...routeContext, embeddings: o.embeddings }) },
    { method: "GET", path: /^\/metrics$/, handler: (_req, res) => sendMetrics(res, metrics.render(pool)) },
    { method: "GET", path: /^\/(?:v1\/)?models$/, handler: (_req, res) => listModels(res, entry) },
    { method: "GET", path: /^\/(?:v1\/)?models\/(.+)$/, handler: (_req, res, m) => getModel(res, entry, decodePathPart(m[1]!)) },
    {
      method: "GET",
      path: /^\/health$/,
      public: true,
      handler: (_req, res) => {
        sendJson(res, 200, { status: "ok", slots: { total: pool.size, idle: pool.idle }, queued: pool.queued });
        return 200;
      },
    },
  ];

  /** The route's pattern as a label (raw paths would make one series per model id or typo). */
  function routeName(req: IncomingMessage): string {
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/\/+$/, "") || "/";
    const r = routes.find((x) => x.path.test(path));
    return r === undefined ? "unknown" : r.path.source.replace(/^\^|\$$/g, "").replace(/\\\//g, "/").replace("(?:v1/)?", "v1/").replace("(.+)", "{id}");
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<number> {
    // A refused browser origin learns nothing, not even whether a route exists.
    for (const [k, v] of Object.entries(origins.check(req))) res.setHeader(k, v);
    if (origins.preflight(req, res)) return 204;
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/\/+$/, "") || "/";
    const matching = routes.map((r) => ({ r, m: r.path.exec(path) })).filter((x) => x.m !== null);
    const hit = matching.find((x) => x.r.method === req.method);
    // 401 before 404 and 405: without the key, the routes cannot be probed.
    if (hit?.r.public !== true) authorize(hit?.r.credentials?.(req) ?? req);
    if (matching.length === 0) throw new HttpError(404, "invalid_request_error", `no route for ${req.method} ${path}`, { code: "not_found" });
    if (hit === undefined) {
      const allow = [...new Set(matching.map((x) => x.r.method))].join(", ");
      throw new HttpError(405, "invalid_request_error", `${req.method} is not allowed on ${path} (allowed: ${allow})`, { code: "method_not_allowed", headers: { allow } });
    }
    return hit.r.handler(req, res, hit.m!);
  }

  const server = createServer((req, res) => {
    const t0 = performance.now();
    void handle(req, res)
      .catch((e: unknown) => sendError(res, e))
      .then((status) => {
        metrics.request(routeName(req), status);
        return status;
      })
      .then((status) => o.log?.(`${req.method} ${req.url} ${status} ${(performance.now() - t0).toFixed(0)}ms`));
  });
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      void planWorker.close().finally(() => reject(new LlamapegError("ERR_INVALID_ARGUMENT", `cannot listen on ${o.host}:${o.port}: ${e.code === "EADDRINUSE" ? "the address is in use" : e.code === "EACCES" ? "permission denied" : e.message}`, { where: "port", cause: e }))),
    );
    server.listen(o.port, o.host, () => {
      server.removeAllListeners("error");
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    server,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      pool.close(new HttpError(503, "server_error", "the server is shutting down", { code: "shutting_down" }));
      shutdown.abort();
      server.closeIdleConnections();
      // Running requests see the abort and end their responses; then the rest of the sockets go.
      setTimeout(() => server.closeAllConnections(), 1000).unref();
      await closed;
      await planWorker.close();
    },
  };
}
