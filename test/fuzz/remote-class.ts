// Hostile llama-servers for the fleet client (issue 28.8): a stream line that never ends (16 MB,
// where the old reader spent O(n²)), an endless or trickling /props, keep-alive pings and nothing
// else, a 200 with a body that is not an event stream. Alone, each is a coded error within the
// deadline and a bounded buffer; beside a good server, the request fails over and completes there.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import type { TargetRequest } from "../../lib/openai/index.js";
import { connectLlamaServer } from "../../lib/remote/index.js";
import { startFakeServer, type FakeOptions, type FakeServer } from "../remote/fake-server.js";
import type { FuzzClass } from "./classes.js";

type Hostility = "endless-line" | "endless-props" | "trickling-props" | "pings" | "garbage-200";

interface RemoteCase {
  hostility: Hostility;
  /** Beside a good server (the request must fail over), or alone (a coded error). */
  fleet: boolean;
}

const TIMEOUT_MS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function completionHostility(h: Hostility): FakeOptions["completion"] {
  return async (_body, res) => {
    res.writeHead(200, { "content-type": h === "garbage-200" ? "text/html" : "text/event-stream" });
    if (h === "garbage-200") {
      res.end("<html><body>502 Bad Gateway</body></html>\n\n");
      return;
    }
    if (h === "pings") {
      for (let i = 0; i < 200 && !res.destroyed; i++) {
        res.write(": ping\n\n");
        await sleep(100);
      }
      res.end();
      return;
    }
    // endless-line: data with no line end, 16 MB in 64 KiB writes
    const block = Buffer.alloc(64 * 1024, 0x78);
    res.write("data: ");
    for (let i = 0; i < 256 && !res.destroyed; i++) if (!res.write(block)) await new Promise((r) => res.once("drain", r));
    res.end();
  };
}

/** A server whose /props never ends (or trickles); nothing else. */
async function propsServer(h: "endless-props" | "trickling-props"): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"chat_template": "');
    const block = h === "endless-props" ? "x".repeat(64 * 1024) : "x";
    for (let i = 0; i < 100_000 && !res.destroyed; i++) {
      if (!res.write(block)) await new Promise((r) => res.once("drain", r));
      if (h === "trickling-props") await sleep(200);
    }
    res.end('"}');
    void req;
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const request: TargetRequest = { prompt: { text: "hi" }, grammar: null, preservedTokens: [], maxTokens: 3 };

export const fuzzClass: FuzzClass<RemoteCase> = {
  cases: () => (["endless-line", "endless-props", "trickling-props", "pings", "garbage-200"] as const).flatMap((hostility) => [false, true].map((fleet) => ({ hostility, fleet }))),
  describe: (c) => `${c.hostility}${c.fleet ? " beside a good server" : " alone"}`,
  async run(c) {
    const closers: (() => Promise<void>)[] = [];
    try {
      const hostile =
        c.hostility === "endless-props" || c.hostility === "trickling-props" ? await propsServer(c.hostility) : await startFakeServer({ completion: completionHostility(c.hostility) });
      closers.push(() => hostile.close());
      const urls = [hostile.url];
      let good: FakeServer | undefined;
      if (c.fleet) {
        good = await startFakeServer();
        closers.push(() => good!.close());
        urls.push(good.url);
      }
      const backend = connectLlamaServer({ urls, strategy: "round-robin", timeoutMs: TIMEOUT_MS, connectTimeoutMs: 500 });
      closers.unshift(async () => backend.close());
      const t0 = Date.now();
      const generation = await backend.generate(request);
      const result = await generation.result();
      // alone, the hostile server cannot have answered: a success there is a finding
      if (!c.fleet) throw new Error(`a hostile server (${c.hostility}) produced a result: ${JSON.stringify(result.text)}`);
      if (generation.server !== good!.url) throw new Error(`the result came from ${generation.server}, not the good server`);
      return { ms: Date.now() - t0, text: result.text };
    } finally {
      for (const close of closers) await close().catch(() => undefined);
    }
  },
};
