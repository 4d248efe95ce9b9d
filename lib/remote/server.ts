/**
 * One llama-server process, as this client sees it: its endpoints (/props, /slots, /health,
 * /tokenize, /completion), what it told us about its model, its in-flight requests, and its failure
 * record (a server that failed is skipped for a while, longer each time in a row).
 */
import { RemoteError } from "./errors.js";
import { readBody, send, type HttpAgents, type RequestOptions, type Response } from "./http.js";

export interface ServerProps {
  chatTemplate: string | null;
  toolUseTemplate: string | null;
  bos: string;
  eos: string;
  /** The model file's name (as the in-process target names it), else `model_alias`. */
  modelName: string;
  totalSlots: number;
  contextSize: number | undefined;
}

export interface Load {
  /** Slots generating or processing a prompt. */
  busy: number;
  total: number;
}

export interface Timeouts {
  connectTimeoutMs: number;
  timeoutMs: number;
}

const SKIP_BASE_MS = 2_000;
const SKIP_MAX_MS = 60_000;

export class RemoteServer {
  /** Base URL, no trailing slash. */
  readonly url: string;
  /** Requests of ours running on it now. */
  inFlight = 0;
  /** Generations it has accepted from us (HTTP 200 on /completion). */
  accepted = 0;
  /** Not chosen before this time (ms since epoch) unless every server is skipped. */
  skipUntil = 0;
  lastError: RemoteError | undefined;
  #failures = 0;
  #props: Promise<ServerProps> | undefined;
  /** /slots answers 501 when the server runs with --no-slots: fall back to /health. */
  #slotsEndpoint = true;
  readonly #agents: HttpAgents;
  readonly #apiKey: string | undefined;
  readonly #timeouts: Timeouts;
  /** Text -> token ids, per (parseSpecial, addSpecial): triggers and markers repeat across requests. */
  readonly #tokenCache = new Map<string, number[]>();
  /** Token id -> its piece's bytes. */
  readonly #pieceCache = new Map<number, Uint8Array>();
  /** Token id -> whether it is a control token (text without special parsing never gives it). */
  readonly #controlCache = new Map<number, boolean>();
  #affixes: Promise<{ prefix: number[]; suffix: number[] }> | undefined;

  constructor(url: string, agents: HttpAgents, apiKey: string | undefined, timeouts: Timeouts) {
    this.url = url;
    this.#agents = agents;
    this.#apiKey = apiKey;
    this.#timeouts = timeouts;
  }

  /** Records a failure: skipped for 2 s, 4 s, ... up to a minute while the failures go on. */
  failed(error: RemoteError): void {
    this.lastError = error;
    this.#failures++;
    this.skipUntil = Date.now() + Math.min(SKIP_MAX_MS, SKIP_BASE_MS * 2 ** (this.#failures - 1));
    // Props may have changed (a restarted server may run another model): ask again next time.
    this.#props = undefined;
    this.#affixes = undefined;
  }

  succeeded(): void {
    this.#failures = 0;
    this.skipUntil = 0;
    this.lastError = undefined;
  }

  options(method: "GET" | "POST", body?: unknown, signal?: AbortSignal): RequestOptions {
    return {
      method,
      body,
      connectTimeoutMs: this.#timeouts.connectTimeoutMs,
      idleTimeoutMs: this.#timeouts.timeoutMs,
      ...(this.#apiKey !== undefined ? { apiKey: this.#apiKey } : {}),
      ...(signal !== undefined ? { signal } : {}),
    };
  }

  /** Opens a request; the caller reads the body. */
  open(path: string, o: RequestOptions): Promise<Response> {
    return send(this.#agents, this.url, path, o);
  }

  /** A JSON request; a non-2xx answer is ERR_REMOTE_REFUSED carrying the server's message. */
  async json<T>(method: "GET" | "POST", path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await this.open(path, this.options(method, body, signal));
    const text = await readBody(this.url, res.body, this.#timeouts.timeoutMs);
    if (res.status < 200 || res.status >= 300) throw refusal(this.url, path, res.status, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new RemoteError("ERR_REMOTE_PROTOCOL", `${this.url}${path}: the answer is not JSON (${text.slice(0, 120)})`, { server: this.url, stage: "body" });
    }
  }

  /** What the server says about its model (asked once, again after a failure). */
  props(): Promise<ServerProps> {
    if (!this.#props) {
      const p = this.json<Record<string, unknown>>("GET", "/props").then(parseProps);
      p.catch(() => {
        if (this.#props === p) this.#props = undefined;
      });
      this.#props = p;
    }
    return this.#props;
  }

  /** How busy it is: from /slots, else /health (with our own count of requests as the load). */
  async load(): Promise<Load> {
    const props = await this.props();
    if (this.#slotsEndpoint) {
      try {
        const slots = await this.json<{ is_processing?: boolean }[]>("GET", "/slots");
        if (Array.isArray(slots)) {
          const busy = slots.filter((s) => s !== null && typeof s === "object" && s.is_processing === true).length;
          return { busy, total: slots.length || props.totalSlots };
        }
      } catch (error) {
        // 501 (disabled with --no-slots) or 404 (an older server): /health tells only up or down.
        if (!(error instanceof RemoteError && (error.status === 501 || error.status === 404))) throw error;
        this.#slotsEndpoint = false;
      }
    }
    await this.json("GET", "/health");
    return { busy: this.inFlight, total: props.totalSlots };
  }

  /** Token ids of `text` (cached). `parseSpecial: false` keeps special-token text as plain text. */
  async tokenize(text: string, o: { addSpecial: boolean; parseSpecial: boolean }, signal?: AbortSignal): Promise<number[]> {
    const key = `${o.addSpecial ? 1 : 0}${o.parseSpecial ? 1 : 0}${text}`;
    const hit = this.#tokenCache.get(key);
    if (hit) return hit;
    const r = await this.json<{ tokens?: unknown }>("POST", "/tokenize", { content: text, add_special: o.addSpecial, parse_special: o.parseSpecial }, signal);
    if (!Array.isArray(r.tokens) || !r.tokens.every((t) => Number.isInteger(t))) {
      throw new RemoteError("ERR_REMOTE_PROTOCOL", `${this.url}/tokenize: expected {tokens: number[]}`, { server: this.url });
    }
    const ids = r.tokens as number[];
    // Only short texts (markers, triggers) are worth keeping; prompts rarely repeat byte for byte.
    if (text.length <= 64) {
      if (this.#tokenCache.size > 4096) this.#tokenCache.clear();
      this.#tokenCache.set(key, ids);
    }
    return ids;
  }

  /** `text` tokenized with special tokens parsed, no BOS/EOS, with each token's bytes. */
  async tokenizeWithPieces(text: string, signal?: AbortSignal): Promise<{ id: number; piece: Uint8Array }[]> {
    const r = await this.json<{ tokens?: { id?: unknown; piece?: unknown }[] }>("POST", "/tokenize", { content: text, add_special: false, parse_special: true, with_pieces: true }, signal);
    const out: { id: number; piece: Uint8Array }[] = [];
    for (const t of Array.isArray(r.tokens) ? r.tokens : [null]) {
      const piece = t === null || typeof t !== "object" ? null : pieceBytes(t.piece);
      if (piece === null || !Number.isInteger(t!.id)) throw new RemoteError("ERR_REMOTE_PROTOCOL", `${this.url}/tokenize: expected {tokens: [{id, piece}]}`, { server: this.url });
      out.push({ id: t!.id as number, piece });
    }
    return out;
  }

  /** What tokenizing with `add_special` puts before and after a text (BOS, EOS...), asked once. */
  specialAffixes(signal?: AbortSignal): Promise<{ prefix: number[]; suffix: number[] }> {
    if (!this.#affixes) {
      const p = (async () => {
        const [bare, full] = await Promise.all([
          this.tokenize("a", { addSpecial: false, parseSpecial: false }, signal),
          this.tokenize("a", { addSpecial: true, parseSpecial: false }, signal),
        ]);
        let at = 0;
        while (at + bare.length <= full.length && !bare.every((t, i) => full[at + i] === t)) at++;
        return at + bare.length <= full.length ? { prefix: full.slice(0, at), suffix: full.slice(at + bare.length) } : { prefix: [], suffix: [] };
      })();
      p.catch(() => {
        if (this.#affixes === p) this.#affixes = undefined;
      });
      this.#affixes = p;
    }
    return this.#affixes;
  }

  /** Whether token `id` (whose text is `text`) is a control token: plain tokenization of its text does not give it. */
  async isControl(id: number, text: string, signal?: AbortSignal): Promise<boolean> {
    const hit = this.#controlCache.get(id);
    if (hit !== undefined) return hit;
    const plain = await this.tokenize(text, { addSpecial: false, parseSpecial: false }, signal);
    const control = !(plain.length === 1 && plain[0] === id);
    if (this.#controlCache.size > 65_536) this.#controlCache.clear();
    this.#controlCache.set(id, control);
    return control;
  }

  /** The bytes of one token (as /tokenize with_pieces renders it: special tokens as text), cached. */
  async tokenPiece(id: number, signal?: AbortSignal): Promise<Uint8Array> {
    const hit = this.#pieceCache.get(id);
    if (hit) return hit;
    // /tokenize takes token ids inside `content` as they are and reports their pieces.
    const r = await this.json<{ tokens?: { id?: unknown; piece?: unknown }[] }>("POST", "/tokenize", { content: [id], with_pieces: true }, signal);
    const piece = Array.isArray(r.tokens) && r.tokens.length === 1 && r.tokens[0]!.id === id ? pieceBytes(r.tokens[0]!.piece) : null;
    if (piece === null) throw new RemoteError("ERR_REMOTE_PROTOCOL", `${this.url}/tokenize: expected the piece of token ${id}`, { server: this.url });
    if (this.#pieceCache.size > 4096) this.#pieceCache.clear();
    this.#pieceCache.set(id, piece);
    return piece;
  }
}

function pieceBytes(piece: unknown): Uint8Array | null {
  if (typeof piece === "string") return new TextEncoder().encode(piece);
  if (Array.isArray(piece) && piece.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return Uint8Array.from(piece as number[]);
  return null;
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function parseProps(p: Record<string, unknown>): ServerProps {
  if (p === null || typeof p !== "object") throw new TypeError("/props is not an object");
  const settings = p.default_generation_settings as Record<string, unknown> | undefined;
  const path = str(p.model_path) ?? "";
  const template = str(p.chat_template);
  return {
    chatTemplate: template === null || template === "" ? null : template,
    toolUseTemplate: str(p.chat_template_tool_use),
    bos: str(p.bos_token) ?? "",
    eos: str(p.eos_token) ?? "",
    modelName: (path.split(/[\\/]/).pop() ?? "") || str(p.model_alias) || "llama-server",
    totalSlots: typeof p.total_slots === "number" && p.total_slots > 0 ? p.total_slots : 1,
    contextSize: typeof settings?.n_ctx === "number" ? settings.n_ctx : undefined,
  };
}

/** A non-2xx answer as ERR_REMOTE_REFUSED, with llama-server's `{error: {message}}` when present. */
export function refusal(server: string, path: string, status: number, body: string): RemoteError {
  let message = body.slice(0, 500);
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown } | string };
    if (typeof j.error === "string") message = j.error;
    else if (j.error && typeof j.error.message === "string") message = j.error.message;
  } catch {
    // not JSON: keep the text
  }
  return new RemoteError("ERR_REMOTE_REFUSED", `${server}${path} answered ${status}: ${message}`, { server, status, stage: "headers" });
}
