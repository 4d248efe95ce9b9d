/**
 * The JS half of `loadModel(path, {rpcServers})`: validates the endpoints and checks each one with
 * the RPC handshake (rpc-probe.ts) before the native side connects, and runs loads that use
 * rpc-servers one at a time.
 *
 * ggml keeps one connection per endpoint per process, and rpc-server serves one client at a time,
 * so an endpoint this process has connected to before may still be held by our own connection (it
 * closes when the last model using it is freed, which may be after `dispose()`): a handshake would
 * wait behind it. For those, an open TCP port is the check (ggml reuses its live connection, or
 * makes a new one to a server that is up).
 */
import { LlamapegError } from "../errors.js";
import { parseRpcEndpoint, probeRpcServer, probeTcp } from "./rpc-probe.js";

/** ggml's GGML_RPC_MAX_SERVERS. */
const MAX_SERVERS = 16;

/** Endpoints this process has connected to. */
const connected = new Set<string>();
let queue: Promise<unknown> = Promise.resolve();

export function checkRpcServers(value: unknown, vocabOnly: boolean): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new LlamapegError("ERR_INVALID_ARGUMENT", 'rpcServers must be an array of "host:port" strings', { where: "rpcServers" });
  if (value.length > MAX_SERVERS) throw new LlamapegError("ERR_INVALID_ARGUMENT", `rpcServers lists ${value.length} servers; ggml takes at most ${MAX_SERVERS}`, { where: "rpcServers" });
  const out: string[] = [];
  value.forEach((v, i) => {
    parseRpcEndpoint(v, `rpcServers[${i}]`);
    if (out.includes(v as string)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `rpcServers[${i}] = ${JSON.stringify(v)} is listed twice`, { where: `rpcServers[${i}]` });
    out.push(v as string);
  });
  if (out.length > 0 && vocabOnly) throw new LlamapegError("ERR_INVALID_ARGUMENT", "rpcServers needs the weights: it cannot be combined with vocabOnly", { where: "rpcServers" });
  return out;
}

/** Runs `load(endpoints)` after checking the endpoints (at once when there are none). */
export async function withRpcServers<T>(value: unknown, vocabOnly: boolean, load: (endpoints: string[]) => Promise<T>): Promise<T> {
  const endpoints = checkRpcServers(value, vocabOnly);
  if (endpoints.length === 0) return load(endpoints);
  const run = queue.then(async () => {
    await Promise.all(endpoints.map((e) => (connected.has(e) ? probeTcp(e) : probeRpcServer(e))));
    for (const e of endpoints) connected.add(e);
    return load(endpoints);
  });
  queue = run.catch(() => undefined);
  return run;
}
