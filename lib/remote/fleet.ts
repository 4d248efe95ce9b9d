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
  /** Our requests on the server when it reported `load` (already inside its busy count). */
  ours: number;
}

export class Fleet {
  readonly servers: readonly RemoteServer[];
  readonly strategy: Strategy;
  #turn = 0;
  readonly #loads = new Map<RemoteServer, Snapshot>();
  readonly #pending = new Map<RemoteServer, Promise<Snapshot>>();

  constructor(servers: readonly RemoteServer[], strategy: Strategy) {
    this.servers = servers;
    this.strategy = strategy;
  }

  /**
   * The best server not in `tried`, with one request reserved on it (`inFlight` + 1) in the same
   * synchronous step that ranked it, so concurrent picks see each other. The caller releases it.
   * `takeTurn` (for requests, not metadata) moves the round-robin start on.
   */
  async pick(tried: ReadonlySet<RemoteServer>, takeTurn = true): Promise<RemoteServer | undefined> {
    const [best] = await this.order(tried, takeTurn, true);
    return best;
  }

  /** The servers to try, best first; `tried` are left out. Empty only when all were tried. */
  async order(tried: ReadonlySet<RemoteServer>, takeTurn = true, reserve = false): Promise<RemoteServer[]> {
    const now = Date.now();
    const left = this.servers.filter((s) => !tried.has(s));
    if (left.length === 0) return [];
    const start = (takeTurn ? this.#turn++ : this.#turn) % this.servers.length;
    const rotation = (s: RemoteServer) => (this.servers.indexOf(s) - start + this.servers.length) % this.servers.length;
    const done = (list: RemoteServer[]) => {
      if (reserve && list[0] !== undefined) list[0].inFlight++;
      return list;
    };
    let live = left.filter((s) => s.skipUntil <= now);
    if (live.length === 0) return done([...left].sort((a, b) => a.skipUntil - b.skipUntil));
    live.sort((a, b) => rotation(a) - rotation(b));
    if (this.strategy === "round-robin" || live.length === 1) return done([...live, ...skipped(left, now)]);

    const snaps = await Promise.all(live.map((s) => this.#load(s)));
    // From here to the reservation nothing awaits: the free slots below count every request
    // reserved so far. Busy = what the server reported, plus our requests started since.
    const free = new Map<RemoteServer, number>();
    live.forEach((s, i) => {
      const snap = snaps[i]!;
      // A server that could not report its load is still tried, after those that could.
      free.set(s, snap.load === null ? -Infinity : snap.load.total - snap.load.busy - Math.max(0, s.inFlight - snap.ours));
    });
    live = live.filter((s) => s.skipUntil <= Date.now() || free.get(s) !== -Infinity);
    // Array.prototype.sort is stable: equal free slots keep the round-robin order.
    live.sort((a, b) => free.get(b)! - free.get(a)!);
    return done([...live, ...skipped(left, now)]);
  }

  async #load(s: RemoteServer): Promise<Snapshot> {
    const snap = this.#loads.get(s);
    if (snap && Date.now() - snap.at < LOAD_TTL_MS) return snap;
    let p = this.#pending.get(s);
    if (!p) {
      const ours = s.inFlight;
      p = s.load().then(
        (load) => ({ at: Date.now(), load, ours }),
        (error: RemoteError) => {
          s.failed(error);
          return { at: Date.now(), load: null, ours };
        },
      );
      this.#pending.set(s, p);
      void p.then((fresh) => {
        this.#pending.delete(s);
        this.#loads.set(s, fresh);
      });
    }
    return p;
  }
}

function skipped(servers: readonly RemoteServer[], now: number): RemoteServer[] {
  return servers.filter((s) => s.skipUntil > now).sort((a, b) => a.skipUntil - b.skipUntil);
}
