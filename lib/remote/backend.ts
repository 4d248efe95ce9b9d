/**
 * `connectLlamaServer(urls | options)`: a `CompletionTarget` on llama-server processes. The chat
 * layer renders, plans and parses here; a server only tokenizes and generates (/tokenize,
 * /completion with token ids, grammar, lazy triggers, preserved tokens, sampling fields).
 *
 * Choosing a server: see fleet.ts. A request moves to another server only before its stream has
 * begun (connection refused, connect timeout, 503, a server with another model); once tokens flow,
 * a failure ends the generation with a coded error (RemoteError, with `partial`), never a silent
 * switch. Stop strings stay on this side (the assembler cuts them, as in-process), so the server
 * streams every token and the chunks match an in-process run token for token.
 */
import { LlamapegError } from "../errors.js";
import { mapTriggersAsync } from "../llama/triggers.js";
import { serverSampling } from "../llama/sampling-params.js";
import { invalidRequest } from "../openai/errors.js";
import type { CompletionTarget, PromptInput, SamplingGrammar, TargetChatInfo, TargetRequest } from "../openai/target.js";
import { RemoteError } from "./errors.js";
import { Fleet, type Strategy } from "./fleet.js";
import { RemoteGeneration } from "./generation.js";
import { createAgents, readBody, type HttpAgents } from "./http.js";
import { tokenizeRemotePrompt } from "./prompt.js";
import { RemoteServer, refusal, type ServerProps } from "./server.js";

export interface LlamaServerOptions {
  /** Base URLs of llama-server processes serving the same model (`http://host:port`). */
  urls: readonly string[];
  /** "least-busy" (default: most free slots per /slots) or "round-robin". */
  strategy?: Strategy;
  /** Sent as `Authorization: Bearer` (llama-server --api-key). */
  apiKey?: string;
  /** Longest wait for the response headers and then between stream chunks. Default 60 000 ms. */
  timeoutMs?: number;
  /** Longest wait for a TCP connection. Default 5 000 ms (at most `timeoutMs`). */
  connectTimeoutMs?: number;
  /** Let the server reuse a slot's KV cache for a shared prompt prefix. Default true. */
  cachePrompt?: boolean;
}

export interface ServerStatus {
  url: string;
  inFlight: number;
  /** Generations it has accepted from this backend. */
  accepted: number;
  /** ms until it is tried again after a failure; 0 when it is not skipped. */
  skippedForMs: number;
  lastError: string | undefined;
}

// llama.cpp's common_grammar_trigger_type values, as llama-server's JSON takes them.
const TRIGGER_TOKEN = 0;
const TRIGGER_PATTERN = 2;

// The sampler chain the in-process sampler runs (native/sampling.cpp): penalties, top-k, top-p,
// min-p, temperature, then the seeded draw. Named explicitly so a server started with other
// defaults still samples the same way.
const SAMPLERS = ["penalties", "top_k", "top_p", "min_p", "temperature"];

/**
 * llama-server runs its own chat parser over every streamed event of /completion too, and fails
 * the stream when the output does not parse as its default content-only format (e.g. invalid
 * UTF-8 from a random model). The parsing is ours: give it a PEG that matches the empty prefix
 * (our serialized `p.eps()`, llama.cpp's arena JSON), so it never fails and costs nothing.
 */
const NO_SERVER_PARSE = JSON.stringify({ parsers: [{ type: "epsilon" }], rules: {}, root: 0 });

/** The final event's fields worth sending (the default adds the prompt text and the grammar). */
const FINAL_FIELDS = ["content", "tokens", "stop", "stop_type", "truncated", "tokens_predicted", "tokens_evaluated", "timings"];

/**
 * What llama-server cannot give as in-process: log probabilities (its n_probs come from the raw
 * logits or the post-sampling candidates, not the in-process sampler's after bias and penalties,
 * and the stream's exact bytes already take n_probs 1 after sampling), and per-request prompt
 * lookup (its speculation is set when it starts, `--spec-*`). Fast-forward is a speed hint: a
 * llama-server target samples every token, the text under the grammar is valid either way.
 */
function checkRemoteFields(request: TargetRequest): void {
  if (request.logprobs === true) invalidRequest("logprobs", "not supported on a llama-server target (its n_probs are not the in-process sampler's log probabilities)");
  if (request.speculative !== undefined) invalidRequest("speculative", "not supported on a llama-server target (its speculative decoding is set when it starts: --spec-type, --draft-max)");
}

type TriggerJson = { type: number; value: string; token?: number };

export class LlamaServerBackend implements CompletionTarget {
  readonly #fleet: Fleet;
  readonly #agents: HttpAgents;
  readonly #cachePrompt: boolean;
  readonly #timeouts: { connectTimeoutMs: number; timeoutMs: number };
  /** The model identity the plans are built for: the first server that answered. */
  #reference: Promise<ServerProps> | undefined;
  #closed = false;

  /** @internal use `connectLlamaServer()` */
  constructor(o: Required<Omit<LlamaServerOptions, "apiKey">> & { apiKey: string | undefined }) {
    this.#agents = createAgents();
    this.#timeouts = { connectTimeoutMs: o.connectTimeoutMs, timeoutMs: o.timeoutMs };
    this.#cachePrompt = o.cachePrompt;
    const servers = o.urls.map((u) => new RemoteServer(u, this.#agents, o.apiKey, this.#timeouts));
    this.#fleet = new Fleet(servers, o.strategy);
  }

  get urls(): string[] {
    return this.#fleet.servers.map((s) => s.url);
  }

  /** Per server: requests running, whether it is being skipped and why. */
  status(): ServerStatus[] {
    const now = Date.now();
    return this.#fleet.servers.map((s) => ({
      url: s.url,
      inFlight: s.inFlight,
      accepted: s.accepted,
      skippedForMs: Math.max(0, s.skipUntil - now),
      lastError: s.lastError?.message,
    }));
  }

  /** The chat templates and BOS/EOS texts of the fleet's model (from the first server that answers /props). */
  async chatInfo(): Promise<TargetChatInfo> {
    const p = await this.#referenceProps();
    return { name: p.modelName, chatTemplate: p.chatTemplate, toolUseTemplate: p.toolUseTemplate, bos: p.bos, eos: p.eos };
  }

  /**
   * Tokenizes the prompt on the chosen server and opens its /completion stream. Resolves once the
   * server has accepted the request (HTTP 200); the items then stream from the returned generation.
   */
  async generate(request: TargetRequest): Promise<RemoteGeneration> {
    if (this.#closed) throw new LlamapegError("ERR_DISPOSED", "this llama-server backend was closed");
    checkRemoteFields(request);
    const signal = request.signal;
    const reference = await this.#referenceProps();
    const tried = new Set<RemoteServer>();
    const failures: RemoteError[] = [];
    for (;;) {
      if (signal?.aborted) throw aborted(signal);
      const server = await this.#fleet.pick(tried, tried.size === 0);
      if (server === undefined) throw unavailable(failures);
      tried.add(server);
      let released = false;
      const release = () => {
        if (!released) server.inFlight--;
        released = true;
      };
      try {
        return await this.#start(server, request, reference, (error) => {
          release();
          // A stream cut by a dead server: skip it for a while (the request itself is not retried).
          if (error instanceof RemoteError && (error.code === "ERR_REMOTE_STREAM" || error.code === "ERR_REMOTE_TIMEOUT")) server.failed(error);
        });
      } catch (error) {
        release();
        if (signal?.aborted) throw aborted(signal);
        if (error instanceof RemoteError && movable(error)) {
          server.failed(error);
          failures.push(error);
          continue;
        }
        throw error;
      }
    }
  }

  /**
   * The token ids a request with this prompt sends (tokenized on the server the fleet picks now):
   * special tokens parsed only outside the message segments, as in-process.
   */
  async tokenize(prompt: PromptInput, signal?: AbortSignal): Promise<number[]> {
    const tried = new Set<RemoteServer>();
    const failures: RemoteError[] = [];
    for (;;) {
      const [server] = await this.#fleet.order(tried, false);
      if (server === undefined) throw unavailable(failures);
      tried.add(server);
      try {
        return await tokenizeRemotePrompt(server, prompt, signal);
      } catch (error) {
        if (!(error instanceof RemoteError) || !movable(error)) throw error;
        server.failed(error);
        failures.push(error);
      }
    }
  }

  /** Closes the kept-alive connections. Running generations are not stopped; new ones are refused. */
  close(): void {
    this.#closed = true;
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  #referenceProps(): Promise<ServerProps> {
    if (!this.#reference) {
      const p = (async () => {
        const failures: RemoteError[] = [];
        const tried = new Set<RemoteServer>();
        for (;;) {
          const [server] = await this.#fleet.order(tried, false);
          if (server === undefined) throw unavailable(failures);
          tried.add(server);
          try {
            const props = await server.props();
            server.succeeded();
            return props;
          } catch (error) {
            if (!(error instanceof RemoteError)) throw error;
            server.failed(error);
            failures.push(error);
          }
        }
      })();
      p.catch(() => {
        if (this.#reference === p) this.#reference = undefined;
      });
      this.#reference = p;
    }
    return this.#reference;
  }

  async #start(server: RemoteServer, request: TargetRequest, reference: ServerProps, onEnd: (error: unknown) => void): Promise<RemoteGeneration> {
    const signal = request.signal;
    const props = await server.props();
    const mismatch = differs(props, reference);
    if (mismatch !== null) {
      throw new RemoteError("ERR_REMOTE_REFUSED", `${server.url} serves another model than the fleet's first server (${mismatch} differs); not used`, { server: server.url, stage: "headers" });
    }
    const [prompt, sampling] = await Promise.all([tokenizeRemotePrompt(server, request.prompt, signal), this.#samplingFields(server, request, signal)]);
    const body = {
      prompt,
      stream: true,
      return_progress: true,
      cache_prompt: this.#cachePrompt,
      response_fields: FINAL_FIELDS,
      n_predict: request.maxTokens ?? -1,
      // the in-process defaults (lib/llama/sampling-params.ts) where the request sets nothing
      ...serverSampling(request),
      // llama-server's array form: [[token id, bias], ...] (it skips ids outside its vocabulary)
      logit_bias: request.logitBias === undefined ? [] : [...request.logitBias],
      dry_multiplier: 0,
      typical_p: 1,
      xtc_probability: 0,
      top_n_sigma: -1,
      mirostat: 0,
      dynatemp_range: 0,
      // The exact bytes of each event (see generation.ts): the sampled candidates, after sampling.
      n_probs: 1,
      post_sampling_probs: true,
      samplers: SAMPLERS,
      chat_parser: NO_SERVER_PARSE,
      ...sampling.fields,
      ...budgetFields(request, sampling.fields),
    };
    const res = await server.open("/completion", server.options("POST", body, signal));
    if (res.status !== 200) {
      const text = await readBody(server.url, res.body, this.#timeouts.timeoutMs).catch(() => "");
      const error = refusal(server.url, "/completion", res.status, text);
      if (/exceed_context_size_error/.test(text)) {
        throw new RemoteError("ERR_CONTEXT_FULL", `${server.url}: ${error.message}`, { server: server.url, status: res.status, stage: "headers" });
      }
      throw error;
    }
    server.succeeded();
    server.accepted++;
    const generation = new RemoteGeneration({
      server: server.url,
      response: res.body,
      idleTimeoutMs: this.#timeouts.timeoutMs,
      promptTokens: prompt.length,
      holdTokens: sampling.holdTokens,
      ...(signal !== undefined ? { signal } : {}),
      onEnd,
      tokenPiece: (id) => server.tokenPiece(id),
    });
    // A 200 whose body fails before the first token (garbage, a cut, only pings): nothing was
    // generated, so it counts as a failure before the stream and another server may take it.
    const early = await generation.begin();
    if (early !== undefined) {
      // what the server itself said (an error event: context full, refused) stays what it is
      if (early.code !== "ERR_REMOTE_PROTOCOL" && early.code !== "ERR_REMOTE_STREAM" && early.code !== "ERR_REMOTE_TIMEOUT") throw early;
      throw new RemoteError(early.code === "ERR_REMOTE_PROTOCOL" ? "ERR_REMOTE_PROTOCOL" : "ERR_REMOTE_UNAVAILABLE", `${early.message} (before the first token)`, { server: server.url, stage: "headers", cause: early });
    }
    return generation;
  }

  /**
   * The grammar and marker fields for this server's vocabulary: the triggers mapped by the one
   * mapping the in-process target uses too (lib/llama/triggers.ts), over this server's /tokenize.
   */
  async #samplingFields(server: RemoteServer, request: TargetRequest, signal?: AbortSignal): Promise<{ fields: Record<string, unknown>; holdTokens: Set<number> }> {
    const single = async (text: string): Promise<number | null> => {
      const ids = await server.tokenize(text, { addSpecial: false, parseSpecial: true }, signal);
      return ids.length === 1 ? ids[0]! : null;
    };
    const control = async (id: number, text: string): Promise<boolean> => {
      // Control tokens are matched in text only with special-token parsing on.
      const plain = await server.tokenize(text, { addSpecial: false, parseSpecial: false }, signal);
      return !(plain.length === 1 && plain[0] === id);
    };
    const preserved = [...request.preservedTokens];
    const holdTokens = new Set<number>();
    for (const text of request.preservedTokens) {
      const id = await single(text);
      if (id !== null) holdTokens.add(id);
    }
    const fields: Record<string, unknown> = { preserved_tokens: preserved };
    const g: SamplingGrammar | null = request.grammar;
    if (g === null) return { fields, holdTokens };
    fields.grammar = g.gbnf;
    if (!g.lazy) {
      if (g.prefill !== "") {
        // llama-server prefills only grammars of its own chat plans ("tool_calls"), with the
        // generation prompt, as common_sampler_init does (the in-process grammar.prefill).
        fields.grammar_type = "tool_calls";
        fields.generation_prompt = g.prefill;
      }
      return { fields, holdTokens };
    }
    fields.grammar_lazy = true;
    const mapped = await mapTriggersAsync(g.triggers, { singleToken: single, isControl: control });
    const triggers: TriggerJson[] = mapped.triggers.map((t) => ("pattern" in t ? { type: TRIGGER_PATTERN, value: t.pattern } : { type: TRIGGER_TOKEN, value: t.text, token: t.token }));
    for (const p of mapped.preserve) {
      if (!preserved.includes(p.text)) preserved.push(p.text);
      holdTokens.add(p.id);
    }
    fields.grammar_triggers = triggers;
    return { fields, holdTokens };
  }
}

/**
 * The reasoning budget under llama-server's own /completion fields (server-schema.cpp), which run
 * llama.cpp's budget sampler: the bound, the markers, and the message (always sent: the forced
 * text is built when that field is read). The sampler learns that the prompt opened a block from
 * `generation_prompt`, whose tokens it feeds to the budget first; an eager grammar's prefill
 * already sends the plan's generation prompt there, otherwise the start marker stands for it
 * (without `grammar_type` a server prefills no grammar with it). A budget with no bound is not
 * sent: it only counts, and llama-server reports no reasoning count (the usage has none).
 */
function budgetFields(request: TargetRequest, fields: Record<string, unknown>): Record<string, unknown> {
  const b = request.reasoningBudget;
  if (b === undefined || !Number.isFinite(b.tokens)) return {};
  // llama.cpp builds its budget sampler only with a start marker.
  if (b.start === "") invalidRequest("reasoning_budget_tokens", "not supported on a llama-server target for this template: its reasoning block has no start marker, and llama-server's budget needs one");
  const out: Record<string, unknown> = {
    reasoning_budget_tokens: b.tokens,
    reasoning_budget_start_tag: b.start,
    reasoning_budget_end_tags: b.end,
    reasoning_budget_message: b.message ?? "",
  };
  if (b.open === true && fields.generation_prompt === undefined) out.generation_prompt = b.start;
  return out;
}

/** Before the stream: the request may go to another server (nothing was generated). */
function movable(e: RemoteError): boolean {
  if (e.code === "ERR_REMOTE_UNAVAILABLE" || e.code === "ERR_REMOTE_PROTOCOL") return true;
  if (e.code === "ERR_REMOTE_TIMEOUT") return e.stage !== "body";
  if (e.code === "ERR_REMOTE_STREAM") return e.stage !== "body";
  // 503: loading or no slot free; 502/504: a proxy in front has no server; another model (no status)
  if (e.code === "ERR_REMOTE_REFUSED") return e.status === undefined || e.status === 502 || e.status === 503 || e.status === 504;
  return false;
}

function differs(a: ServerProps, b: ServerProps): string | null {
  if (a.chatTemplate !== b.chatTemplate) return "chat_template";
  if (a.toolUseTemplate !== b.toolUseTemplate) return "chat_template_tool_use";
  if (a.bos !== b.bos) return "bos_token";
  if (a.eos !== b.eos) return "eos_token";
  return null;
}

function aborted(signal: AbortSignal): LlamapegError {
  const reason = signal.reason;
  return new LlamapegError("ERR_ABORTED", `the completion was aborted before it started${reason !== undefined ? `: ${String(reason instanceof Error ? reason.message : reason)}` : ""}`);
}

function unavailable(failures: RemoteError[]): RemoteError {
  const server = failures[0]?.server ?? "llama-server";
  const why = failures.map((f) => f.message).join("; ");
  return new RemoteError("ERR_REMOTE_UNAVAILABLE", `no llama-server could take the request${why ? `: ${why}` : ""}`, { server, cause: failures[0] });
}

function normalizeUrl(u: unknown, i: number): string {
  if (typeof u !== "string" || u.length === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `urls[${i}] must be a non-empty string`, { where: `urls[${i}]` });
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(u) ? u : `http://${u}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `urls[${i}] = ${JSON.stringify(u)} is not a URL`, { where: `urls[${i}]` });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `urls[${i}] = ${JSON.stringify(u)}: only http and https are supported`, { where: `urls[${i}]` });
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

function positiveMs(v: unknown, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `${name} must be a positive number of milliseconds`, { where: name });
  return v;
}

/**
 * A backend over one or more llama-server processes (all serving the same model), for
 * `createChatCompletion(backend, request)`. No connection is made until the first request.
 */
export function connectLlamaServer(target: string | readonly string[] | LlamaServerOptions): LlamaServerBackend {
  const o: LlamaServerOptions = typeof target === "string" ? { urls: [target] } : Array.isArray(target) ? { urls: target as readonly string[] } : (target as LlamaServerOptions);
  if (o === null || typeof o !== "object") throw new LlamapegError("ERR_INVALID_ARGUMENT", "connectLlamaServer takes a URL, a list of URLs or {urls, ...}", { where: "urls" });
  const known = new Set(["urls", "strategy", "apiKey", "timeoutMs", "connectTimeoutMs", "cachePrompt"]);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `unknown option ${JSON.stringify(k)}`, { where: k });
  if (!Array.isArray(o.urls) || o.urls.length === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", "urls must be a non-empty list of llama-server URLs", { where: "urls" });
  const urls = o.urls.map(normalizeUrl);
  if (new Set(urls).size !== urls.length) throw new LlamapegError("ERR_INVALID_ARGUMENT", "urls lists a server twice", { where: "urls" });
  const strategy = o.strategy ?? "least-busy";
  if (strategy !== "least-busy" && strategy !== "round-robin") throw new LlamapegError("ERR_INVALID_ARGUMENT", `strategy must be "least-busy" or "round-robin", got ${JSON.stringify(strategy)}`, { where: "strategy" });
  if (o.apiKey !== undefined && (typeof o.apiKey !== "string" || o.apiKey.length === 0)) throw new LlamapegError("ERR_INVALID_ARGUMENT", "apiKey must be a non-empty string", { where: "apiKey" });
  if (o.cachePrompt !== undefined && typeof o.cachePrompt !== "boolean") throw new LlamapegError("ERR_INVALID_ARGUMENT", "cachePrompt must be a boolean", { where: "cachePrompt" });
  const timeoutMs = positiveMs(o.timeoutMs, "timeoutMs", 60_000);
  const connectTimeoutMs = positiveMs(o.connectTimeoutMs, "connectTimeoutMs", Math.min(5_000, timeoutMs));
  return new LlamaServerBackend({ urls, strategy, apiKey: o.apiKey, timeoutMs, connectTimeoutMs, cachePrompt: o.cachePrompt ?? true });
}
