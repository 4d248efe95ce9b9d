/**
 * Which server takes the next request. "least-busy" (default): the server with the most free slots,
 * from /slots (or /health plus our own count of requests, where /slots is off), read at most every
 * 250 ms per server; ties and servers that cannot say go round robin. "round-robin": in turn.
 * A server that failed is skipped for a while (RemoteServer.failed); when every server is skipped,
 * all are tried again, the one skipped longest ago first.
 */
import type { RemoteError } from "./errors.js";
import type { Load, RemoteServer } from "./server.js";

export type Strategy = "least-busy" | "round-robin";

const LOAD_TTL_MS = 250;

interface Snapshot {
  at: number;
  load: Load | null;
}

export class Fleet {
  readonly servers: readonly RemoteServer[];
  readonly strategy: Strategy;
  #turn = 0;
  readonly #loads = new Map<RemoteServer, Snapshot>();
  readonly #pending = new Map<RemoteServer, Promise<Load | null>>();

  constructor(servers: readonly RemoteServer[], strategy: Strategy) {
    this.servers = servers;
    this.strategy = strategy;
  }

  /**
   * The servers to try, best first; `tried` are left out. Never empty unless all were tried.
   * `takeTurn` (for requests, not for metadata) moves the round-robin start on.
   */
  async order(tried: ReadonlySet<RemoteServer>, takeTurn = true): Promise<RemoteServer[]> {
    const now = Date.now();
    const left = this.servers.filter((s) => !tried.has(s));
    if (left.length === 0) return [];
    const start = (takeTurn ? this.#turn++ : this.#turn) % this.servers.length;
    const rotation = (s: RemoteServer) => (this.servers.indexOf(s) - start + this.servers.length) % this.servers.length;
    let live = left.filter((s) => s.skipUntil <= now);
    if (live.length === 0) return [...left].sort((a, b) => a.skipUntil - b.skipUntil);
    live.sort((a, b) => rotation(a) - rotation(b));
    if (this.strategy === "round-robin" || live.length === 1) return [...live, ...skipped(left, now)];

    const loads = await Promise.all(live.map((s) => this.#load(s)));
    const free = new Map<RemoteServer, number>();
    live.forEach((s, i) => {
      const l = loads[i];
      // A server that could not report its load is still tried, after those that could.
      free.set(s, l === null || l === undefined ? -Infinity : l.total - Math.max(l.busy, s.inFlight));
    });
    live = live.filter((s) => s.skipUntil <= Date.now() || free.get(s) !== -Infinity);
    // Array.prototype.sort is stable: equal free slots keep the round-robin order.
    live.sort((a, b) => free.get(b)! - free.get(a)!);
    return [...live, ...skipped(left, now)];
  }

  async #load(s: RemoteServer): Promise<Load | null> {
    const snap = this.#loads.get(s);
    if (snap && Date.now() - snap.at < LOAD_TTL_MS) return snap.load;
    let p = this.#pending.get(s);
    if (!p) {
      p = s.load().then(
        (load) => load,
        (error: RemoteError) => {
          s.failed(error);
          return null;
        },
      );
      this.#pending.set(s, p);
    }
    const load = await p;
    this.#pending.delete(s);
    this.#loads.set(s, { at: Date.now(), load });
    return load;
  }
}

function skipped(servers: readonly RemoteServer[], now: number): RemoteServer[] {
  return servers.filter((s) => s.skipUntil > now).sort((a, b) => a.skipUntil - b.skipUntil);
}
