/**
 * Checks a ggml rpc-server endpoint before the native side connects to it: ggml's RPC client
 * aborts the whole process when a server cannot be reached or answers the handshake wrongly, so
 * loadModel first does the same HELLO exchange here, where a failure is a coded error.
 *
 * Wire format (ggml-rpc.cpp, protocol 6.x): request = cmd byte (HELLO = 14), u64 LE size, payload
 * (24 bytes of transport caps); response = u64 LE size, payload {major, minor, patch, pad, caps[24]}.
 * rpc-server serves one client at a time: a server busy with another client does not answer, and
 * that is reported as such after the timeout.
 */
import { connect } from "node:net";

import { LlamapegError } from "../errors.js";

const RPC_CMD_HELLO = 14;
const CAPS_SIZE = 24;
const PROTO_MAJOR = 6;
const PROTO_MINOR = 0;
const RSP_SIZE = 4 + CAPS_SIZE;

/** "host:port" -> [host, port], or an ERR_INVALID_ARGUMENT naming `where`. */
export function parseRpcEndpoint(endpoint: unknown, where: string): { host: string; port: number } {
  if (typeof endpoint !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", `${where} must be a "host:port" string`, { where });
  // ggml splits at the first ':' (so no IPv6 literals).
  const colon = endpoint.indexOf(":");
  const host = colon < 0 ? "" : endpoint.slice(0, colon);
  const portText = colon < 0 ? "" : endpoint.slice(colon + 1);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (host.length === 0 || !(port >= 1 && port <= 65535)) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `${where} = ${JSON.stringify(endpoint)} is not "host:port" (e.g. "192.168.1.20:50052")`, { where });
  }
  return { host, port };
}

/** Resolves when a TCP connection to `endpoint` opens (and closes it at once); else ERR_MODEL_LOAD. */
export function probeTcp(endpoint: string, timeoutMs = 5_000): Promise<void> {
  const { host, port } = parseRpcEndpoint(endpoint, "rpcServers");
  return new Promise<void>((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new LlamapegError("ERR_MODEL_LOAD", `rpc-server ${endpoint}: no connection within ${timeoutMs} ms`, { where: endpoint }));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new LlamapegError("ERR_MODEL_LOAD", `rpc-server ${endpoint}: cannot connect (${error.code ?? error.message})`, { where: endpoint }));
    });
  });
}

/** Resolves when `endpoint` answers the RPC handshake with a compatible version; else ERR_MODEL_LOAD. */
export function probeRpcServer(endpoint: string, timeoutMs = 5_000): Promise<void> {
  const { host, port } = parseRpcEndpoint(endpoint, "rpcServers");
  return new Promise<void>((resolve, reject) => {
    let got = Buffer.alloc(0);
    let connected = false;
    const socket = connect({ host, port });
    const fail = (why: string) => {
      socket.destroy();
      reject(new LlamapegError("ERR_MODEL_LOAD", `rpc-server ${endpoint}: ${why}`, { where: endpoint }));
    };
    const timer = setTimeout(
      () => fail(connected ? `no answer to the RPC handshake within ${timeoutMs} ms (not an rpc-server, or it is serving another client)` : `no connection within ${timeoutMs} ms`),
      timeoutMs,
    );
    socket.on("connect", () => {
      connected = true;
      const hello = Buffer.alloc(1 + 8 + CAPS_SIZE);
      hello.writeUInt8(RPC_CMD_HELLO, 0);
      hello.writeBigUInt64LE(BigInt(CAPS_SIZE), 1);
      socket.write(hello);
    });
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 8 + RSP_SIZE) return;
      clearTimeout(timer);
      const size = got.readBigUInt64LE(0);
      const major = got.readUInt8(8);
      const minor = got.readUInt8(9);
      if (size !== BigInt(RSP_SIZE)) return fail("the answer is not an RPC handshake (not an rpc-server?)");
      if (major !== PROTO_MAJOR || minor > PROTO_MINOR) {
        return fail(`speaks RPC protocol ${major}.${minor}.${got.readUInt8(10)}; this build needs ${PROTO_MAJOR}.x (x <= ${PROTO_MINOR}): use an rpc-server of the same llama.cpp version`);
      }
      socket.end();
      resolve();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      fail(`cannot connect (${error.code ?? error.message})`);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      if (got.length < 8 + RSP_SIZE) fail("closed the connection during the handshake (not an rpc-server, or another version)");
    });
  });
}
