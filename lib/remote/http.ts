/**
 * A small HTTP client on node:http for llama-server: JSON requests with a connect timeout, a
 * timeout on the response headers, and streamed bodies with a timeout between chunks, so a dead or
 * stuck server is an error, never a hang. Keep-alive sockets per target (one Agent per backend).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

import { RemoteError } from "./errors.js";

export interface HttpAgents {
  http: HttpAgent;
  https: HttpsAgent;
}

export function createAgents(): HttpAgents {
  return { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
}

export interface RequestOptions {
  method: "GET" | "POST";
  /** Serialized as JSON. */
  body?: unknown;
  apiKey?: string;
  /** Until the TCP (TLS) connection is up. */
  connectTimeoutMs: number;
  /** Until the response headers, and then between body chunks. */
  idleTimeoutMs: number;
  signal?: AbortSignal;
}

export interface Response {
  status: number;
  /** The body: read it with `readBody` / `chunksOf` (they apply the idle timeout). */
  body: IncomingMessage;
}

/** Where a failure happened, for the caller to decide whether another server may take the request. */
export type FailureStage = "connect" | "headers" | "body";

/**
 * Sends one request. Rejects with ERR_REMOTE_UNAVAILABLE when the connection cannot be made (refused,
 * unknown host, connect timeout), ERR_REMOTE_TIMEOUT when the headers do not come in time,
 * ERR_ABORTED when `signal` fires. `error.stage` says how far it got.
 */
export function send(agents: HttpAgents, server: string, path: string, o: RequestOptions): Promise<Response> {
  const url = new URL(path, server);
  const payload = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body));
  const headers: Record<string, string> = { accept: "application/json, text/event-stream" };
  if (payload) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(payload.length);
  }
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  const https = url.protocol === "https:";
  const make = https ? httpsRequest : httpRequest;
  return new Promise<Response>((resolve, reject) => {
    let stage: FailureStage = "connect";
    let settled = false;
    const fail = (error: RemoteError) => {
      if (settled) return;
      settled = true;
      cleanup();
      req.destroy();
      reject(error);
    };
    const req = make(url, { method: o.method, headers, agent: https ? agents.https : agents.http });
    let timer: NodeJS.Timeout | undefined = setTimeout(
      () => fail(new RemoteError("ERR_REMOTE_UNAVAILABLE", `${server}: no connection within ${o.connectTimeoutMs} ms`, { server, stage: "connect" })),
      o.connectTimeoutMs,
    );
    const onAbort = () => fail(new RemoteError("ERR_ABORTED", `${server}: the request was aborted`, { server, stage }));
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      o.signal?.removeEventListener("abort", onAbort);
    };
    if (o.signal) {
      if (o.signal.aborted) {
        queueMicrotask(onAbort);
      } else {
        o.signal.addEventListener("abort", onAbort, { once: true });
      }
    }
    const connected = () => {
      if (stage !== "connect") return;
      stage = "headers";
      if (timer) clearTimeout(timer);
      timer = setTimeout(
        () => fail(new RemoteError("ERR_REMOTE_TIMEOUT", `${server}${path}: no response within ${o.idleTimeoutMs} ms`, { server, stage: "headers" })),
        o.idleTimeoutMs,
      );
    };
    req.on("socket", (socket) => {
      // A kept-alive socket is connected already.
      if (!socket.connecting) connected();
      else socket.once(https ? "secureConnect" : "connect", connected);
    });
    req.on("error", (error: NodeJS.ErrnoException) => {
      const code = stage === "connect" ? "ERR_REMOTE_UNAVAILABLE" : "ERR_REMOTE_STREAM";
      const what = stage === "connect" ? "cannot connect" : "the connection failed";
      fail(new RemoteError(code, `${server}: ${what} (${error.code ?? error.message})`, { server, stage, cause: error }));
    });
    req.on("response", (res) => {
      if (settled) {
        res.destroy();
        return;
      }
      settled = true;
      cleanup();
      stage = "body";
      resolve({ status: res.statusCode ?? 0, body: res });
    });
    req.end(payload);
  });
}

/** Largest JSON answer read (/props carries the chat templates, which are at most 256 KiB each). */
export const MAX_JSON_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Reads a whole body (for small JSON answers): at most `maxBytes` (more is ERR_REMOTE_PROTOCOL, the
 * rest is not read), all of it within `idleTimeoutMs` (a body that trickles in is ERR_REMOTE_TIMEOUT:
 * an answer this small has no reason to take longer than the wait for its headers).
 */
export async function readBody(server: string, res: IncomingMessage, idleTimeoutMs: number, maxBytes = MAX_JSON_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const deadline = setTimeout(() => res.destroy(new Error("deadline")), idleTimeoutMs);
  try {
    for await (const chunk of chunksOf(server, res, idleTimeoutMs)) {
      if ((size += chunk.length) > maxBytes) {
        res.destroy();
        throw new RemoteError("ERR_REMOTE_PROTOCOL", `${server}: the answer is over ${maxBytes} bytes`, { server, stage: "body" });
      }
      chunks.push(chunk);
    }
  } catch (e) {
    if (e instanceof RemoteError && e.code === "ERR_REMOTE_STREAM" && (e.cause as Error | undefined)?.message === "deadline") {
      throw new RemoteError("ERR_REMOTE_TIMEOUT", `${server}: the answer did not complete within ${idleTimeoutMs} ms`, { server, stage: "body" });
    }
    throw e;
  } finally {
    clearTimeout(deadline);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/**
 * The body's chunks. Rejects with ERR_REMOTE_TIMEOUT when no chunk comes for `idleTimeoutMs`, and
 * ERR_REMOTE_STREAM when the connection breaks (ECONNRESET, the server process killed). Returning
 * early only removes the timeout: the caller destroys the response or resumes it.
 */
export async function* chunksOf(server: string, res: IncomingMessage, idleTimeoutMs: number): AsyncGenerator<Buffer> {
  // A timer of our own, not the socket's: it counts only while we wait for the server (not while
  // the consumer holds a chunk), and it does not touch a socket that went back to the pool.
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const arm = () => {
    timer = setTimeout(() => {
      timedOut = true;
      res.destroy(new Error("idle timeout"));
    }, idleTimeoutMs);
  };
  // The server closing the socket before the body's end shows as 'aborted' (no error on older Nodes).
  let aborted = false;
  res.once("aborted", () => (aborted = true));
  arm();
  try {
    for await (const chunk of res) {
      clearTimeout(timer);
      yield chunk as Buffer;
      arm();
    }
  } catch (error) {
    if (timedOut) throw new RemoteError("ERR_REMOTE_TIMEOUT", `${server}: no data for ${idleTimeoutMs} ms`, { server, stage: "body" });
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new RemoteError("ERR_REMOTE_STREAM", `${server}: the connection broke mid-response (${code})`, { server, stage: "body", cause: error });
  } finally {
    // A caller that stops reading early decides: destroy (abort) or resume (drain the rest).
    clearTimeout(timer);
  }
  if (timedOut) throw new RemoteError("ERR_REMOTE_TIMEOUT", `${server}: no data for ${idleTimeoutMs} ms`, { server, stage: "body" });
  if (aborted || !res.complete) {
    throw new RemoteError("ERR_REMOTE_STREAM", `${server}: the connection closed before the response ended`, { server, stage: "body" });
  }
}
