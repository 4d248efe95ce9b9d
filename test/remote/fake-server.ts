/**
 * A scripted stand-in for llama-server (node:http on 127.0.0.1) for the unit tests of lib/remote:
 * /props, /slots, /health, /tokenize as llama-server answers them (a toy vocabulary: one id per
 * byte, plus named special tokens), and /completion answered by the test's script, so the unhappy
 * paths (cuts, stalls, errors, odd events) can be produced at will.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface FakeOptions {
  /** Special-token text -> id (parsed only with parse_special). Control tokens are listed in `control`. */
  specials?: Record<string, number>;
  control?: number[];
  chatTemplate?: string;
  totalSlots?: number;
  /** Slots reported busy by /slots; null answers 501 (llama-server --no-slots). */
  busySlots?: number | null;
  /** Answers /completion; the default streams "hi" token by token. */
  completion?: (body: Record<string, unknown>, res: ServerResponse, req: IncomingMessage) => void | Promise<void>;
}

export const BOS = 1;

export interface FakeServer {
  url: string;
  /** Every /completion body received. */
  bodies: Record<string, unknown>[];
  options: FakeOptions;
  close(): Promise<void>;
}

/** One SSE event as llama-server writes it. */
export function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

/** A partial event for `bytes` (one token `id`, n tokens predicted so far). */
export function token(id: number, bytes: number[] | string, predicted: number): Record<string, unknown> {
  const raw = typeof bytes === "string" ? [...Buffer.from(bytes)] : bytes;
  return {
    index: 0,
    content: Buffer.from(raw).toString("utf8"),
    tokens: [id],
    stop: false,
    id_slot: 0,
    tokens_predicted: predicted,
    tokens_evaluated: 3,
    completion_probabilities: [{ id, token: "", bytes: raw, prob: 1, top_probs: [] }],
  };
}

export function final(stopType: "eos" | "limit", predicted: number): Record<string, unknown> {
  return { content: "", tokens: [], stop: true, stop_type: stopType, tokens_predicted: predicted, tokens_evaluated: 3, truncated: false, timings: { cache_n: 0, prompt_n: 3, prompt_ms: 1.5, predicted_n: predicted, predicted_ms: 2.5 } };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}

function tokenizeText(text: string, o: FakeOptions, parseSpecial: boolean): number[] {
  const specials = Object.entries(o.specials ?? {});
  const out: number[] = [];
  let i = 0;
  outer: while (i < text.length) {
    for (const [s, id] of specials) {
      const control = (o.control ?? []).includes(id);
      if ((parseSpecial || !control) && text.startsWith(s, i)) {
        out.push(id);
        i += s.length;
        continue outer;
      }
    }
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    for (const b of Buffer.from(ch)) out.push(1000 + b);
    i += ch.length;
  }
  return out;
}

function pieceOf(id: number, o: FakeOptions): number[] {
  if (id >= 1000) return [id - 1000];
  const name = Object.entries(o.specials ?? {}).find(([, v]) => v === id)?.[0];
  return name === undefined ? [] : [...Buffer.from(name)];
}

export async function startFakeServer(options: FakeOptions = {}): Promise<FakeServer> {
  const bodies: Record<string, unknown>[] = [];
  const o = options;
  const server: Server = createServer(async (req, res) => {
    try {
      const url = req.url ?? "/";
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (url === "/health") return json(200, { status: "ok" });
      if (url === "/props") {
        return json(200, {
          total_slots: o.totalSlots ?? 1,
          model_path: "/models/fake.gguf",
          chat_template: o.chatTemplate ?? "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n",
          bos_token: "<s>",
          eos_token: "<|im_end|>",
          default_generation_settings: { n_ctx: 512 },
        });
      }
      if (url === "/slots") {
        if (o.busySlots === null) return json(501, { error: { code: 501, message: "This server does not support slots endpoint.", type: "not_supported_error" } });
        const total = o.totalSlots ?? 1;
        return json(200, Array.from({ length: total }, (_, i) => ({ id: i, is_processing: i < (o.busySlots ?? 0) })));
      }
      if (url === "/tokenize") {
        const body = await readJson(req);
        const content = body.content;
        if (Array.isArray(content)) {
          const ids = content as number[];
          return json(200, { tokens: body.with_pieces ? ids.map((id) => ({ id, piece: pieceOf(id, o) })) : ids });
        }
        const ids = tokenizeText(String(content), o, body.parse_special !== false);
        const all = body.add_special === true ? [BOS, ...ids] : ids;
        return json(200, { tokens: body.with_pieces ? all.map((id) => ({ id, piece: pieceOf(id, o) })) : all });
      }
      if (url === "/completion") {
        const body = await readJson(req);
        bodies.push(body);
        if (o.completion) return await o.completion(body, res, req);
        res.writeHead(200, { "content-type": "text/event-stream" });
        sse(res, token(1000 + 104, "h", 1));
        sse(res, token(1000 + 105, "i", 2));
        sse(res, token(2, [], 3));
        sse(res, final("eos", 3));
        res.end();
        return;
      }
      json(404, { error: { code: 404, message: "File Not Found", type: "not_found_error" } });
    } catch (error) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    options: o,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
