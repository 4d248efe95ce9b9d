// Hostile HTTP requests against a real server on the tiny model (issue 28.5, 28.7): each kind must
// be answered with its 4xx in OpenAI's error shape (never a 500, never a crash), at once, and while
// it is handled the server's event loop must stay responsive: each case records the longest
// event-loop stall (perf_hooks' monitor, 10 ms resolution), which bounds how long GET /health
// waited. Bodies are built before the monitor starts, so the client's own work is not counted.
import { monitorEventLoopDelay } from "node:perf_hooks";

import type { Model } from "../../lib/llama/index.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { raw, type RawResponse } from "../model/server-helpers.js";
import type { FuzzClass } from "./classes.js";

interface Req {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: () => string;
  /** On the server that takes an API key / request templates. */
  server?: "keyed" | "templates";
}

interface ServerCase {
  name: string;
  requests: Req[];
  /** Every response must have this status. */
  status: number;
  /** The OpenAI error code expected (when the status is an error). */
  code?: string;
}

const msgs = [{ role: "user", content: "hi" }];
const chat = (extra: Record<string, unknown>) => () => JSON.stringify({ messages: msgs, max_tokens: 2, ...extra });
const nest = (depth: number, leaf: string, open = "[", close = "]") => open.repeat(depth) + leaf + close.repeat(depth);
const deepObject = (depth: number): string => nest(depth, '{"type":"string"}', '{"type":"object","properties":{"a":', "}}");
const tool = (i: number, parameters: unknown = { type: "object", properties: { a: { type: "string" } } }, description = "d") => ({ type: "function", function: { name: `f${i}`, description, parameters } });
const post = (body: () => string, more: Partial<Req> = {}): Req => ({ path: "/v1/chat/completions", method: "POST", headers: { "content-type": "application/json" }, body, ...more });
const hostileTemplates = [
  "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
  "{{ ('a' * 134217729) | replace('a', 'b') }}",
  "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
];

function corpus(): ServerCase[] {
  return [
    { name: "10,000 tools", requests: [post(chat({ tools: Array.from({ length: 10_000 }, (_, i) => tool(i)) }))], status: 400, code: "ERR_INVALID_REQUEST" },
    { name: "10,000-entry enum", requests: [post(chat({ tools: [tool(0, { type: "object", properties: { e: { enum: Array.from({ length: 10_000 }, (_, i) => `v${i}`) } } })] }))], status: 400, code: "ERR_INVALID_REQUEST" },
    { name: "10 MB tool description", requests: [post(chat({ tools: [tool(0, undefined, "x".repeat(10 * 1024 * 1024))] }))], status: 400, code: "ERR_INVALID_REQUEST" },
    { name: "tool schema 10,000 levels deep", requests: [post(() => `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deepObject(10_000)}}}]}`)], status: 400, code: "request_too_complex" },
    { name: "response_format schema 10,000 levels deep", requests: [post(() => `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":${deepObject(10_000)}}}}`)], status: 400, code: "request_too_complex" },
    { name: "chat_template_kwargs 100,000 levels deep", requests: [post(() => `{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"x":${nest(100_000, "1")}}}`)], status: 400, code: "request_too_complex" },
    { name: "malformed JSON 1,000,000 levels deep", requests: [post(() => "[".repeat(1_000_000))], status: 400, code: "request_too_complex" },
    { name: "malformed object 200,000 levels deep", requests: [post(() => '{"a":'.repeat(200_000))], status: 400, code: "request_too_complex" },
    { name: "malformed JSON 500 levels deep", requests: [post(() => '{"a":'.repeat(500) + "]")], status: 400, code: "invalid_json" },
    { name: "bad percent-encoding in the model id", requests: [{ path: "/v1/models/%E0%A4%A" }, { path: "/v1/models/%" }], status: 400, code: "invalid_path" },
    { name: "chat_template from a client (off by default)", requests: [post(chat({ chat_template: "{{ messages }}" }))], status: 400, code: "chat_template_disabled" },
    { name: "unknown fields named like Object.prototype's", requests: ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"].map((k) => post(() => `{"messages":[{"role":"user","content":"hi"}],${JSON.stringify(k)}:{}}`)), status: 400, code: "ERR_INVALID_REQUEST" },
    { name: "no key: an unknown route is 401, not 404", requests: [{ path: "/v1/nope", server: "keyed" }, { path: "/admin", method: "POST", server: "keyed" }, { path: "/v1/models", method: "DELETE", server: "keyed" }], status: 401, code: "invalid_api_key" },
    { name: "a browser page's text/plain POST (cross-origin)", requests: [post(chat({}), { headers: { "content-type": "text/plain", origin: "https://evil.example" } })], status: 403, code: "cross_origin_forbidden" },
    { name: "a cross-site GET without Origin", requests: [{ path: "/v1/models", headers: { "sec-fetch-site": "cross-site" } }], status: 403, code: "cross_origin_forbidden" },
    { name: "a CORS preflight from a page", requests: [{ path: "/v1/chat/completions", method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } }], status: 403, code: "cross_origin_forbidden" },
    { name: "template with a 1e6-item list literal (templates allowed)", requests: [post(chat({ chat_template: `{% set x = [${Array(1_000_000).fill("0").join(",")}] %}{{ x | length }}` }), { server: "templates" })], status: 400, code: "request_too_complex" },
    { name: "20 hostile templates at once (templates allowed)", requests: Array.from({ length: 20 }, (_, i) => post(chat({ chat_template: hostileTemplates[i % hostileTemplates.length] }), { server: "templates" })), status: 400, code: "request_too_complex" },
    {
      // planned in full, then too long for the context: the stall is the planning's and the tokenizing's
      name: "the largest accepted tools: 128 tools of 20 properties",
      requests: [post(chat({ tools: Array.from({ length: 128 }, (_, i) => tool(i, { type: "object", properties: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`p${k}`, { type: k % 2 ? "integer" : "string" }])) })) }))],
      status: 400,
      code: "context_length_exceeded",
    },
  ];
}

let servers: { plain: LlamapegServer; keyed: LlamapegServer; templates: LlamapegServer; model: Model } | undefined;

async function serversFor(): Promise<NonNullable<typeof servers>> {
  if (servers === undefined) {
    const model = await loadTestModel();
    const ctx = () => model.createContext({ contextSize: 2048, threads: 1 });
    const bodyLimit = 32 * 1024 * 1024;
    servers = {
      model,
      plain: await startServer([ctx()], { port: 0, bodyLimit }),
      keyed: await startServer([ctx()], { port: 0, bodyLimit, apiKey: "k" }),
      templates: await startServer([ctx()], { port: 0, bodyLimit, allowRequestTemplates: true }),
    };
  }
  return servers;
}

export const fuzzClass: FuzzClass<ServerCase> = {
  cases: () => corpus(),
  describe: (c) => c.name,
  async run(c) {
    const s = await serversFor();
    const bodies = c.requests.map((r) => (r.body === undefined ? undefined : Buffer.from(r.body())));
    const monitor = monitorEventLoopDelay({ resolution: 10 });
    monitor.enable();
    const t0 = performance.now();
    let responses: RawResponse[];
    try {
      responses = await Promise.all(c.requests.map((r, i) => raw(s[r.server ?? "plain"].url + r.path, { method: r.method ?? "GET", ...(r.headers ? { headers: r.headers } : {}), ...(bodies[i] ? { body: bodies[i] } : {}) })));
    } finally {
      monitor.disable();
    }
    const ms = performance.now() - t0;
    const stallMs = monitor.max / 1e6;
    for (const res of responses) {
      if (res.status !== c.status) throw new Error(`expected ${c.status}, got ${res.status}: ${res.body.slice(0, 300)}`);
      if (c.status >= 400) {
        const e = (JSON.parse(res.body) as { error?: { type?: unknown; message?: unknown; code?: unknown } }).error;
        if (typeof e?.message !== "string" || typeof e.type !== "string") throw new Error(`not OpenAI's error shape: ${res.body.slice(0, 300)}`);
        if (c.code !== undefined && e.code !== c.code) throw new Error(`expected code ${c.code}, got ${String(e.code)}: ${e.message.slice(0, 200)}`);
      }
    }
    return { status: c.status, requestsMs: Math.round(ms), eventLoopStallMs: Math.round(stallMs) };
  },
  async close() {
    if (servers === undefined) return;
    for (const k of ["plain", "keyed", "templates"] as const) await servers[k].close();
    servers.model.dispose();
  },
};
