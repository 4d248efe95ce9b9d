// The server builds chat plans on a worker thread (lib/server/plan-worker.ts, issue 28.5): while
// cold plans for a large tool set and slow client templates are built, its event loop stays free.
// The bound is relative, so it holds on a busy machine: the longest event-loop stall during the
// requests must stay far below the time the same plans take when built on this thread (measured
// here, on the same machine, just before). Absolute /health latencies: `npm run bench:health`.
import { request as httpRequest } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";

import { afterAll, beforeAll, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import type { Model } from "../../lib/llama/index.js";
import { REQUEST_TEMPLATE_LIMITS } from "../../lib/server/chat-route.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { PlanWorker } from "../../lib/server/plan-worker.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
let server: LlamapegServer;
let template: string;

beforeAll(async () => {
  // the sources plan inline unless asked (lib/server/plan-worker.ts); dist/ always plans on the thread
  process.env.LLAMAPEG_PLAN_THREAD_TS = "1";
  model = await loadTestModel();
  template = model.chatTemplate()!;
  server = await startServer([model.createContext({ contextSize: 2048, threads: 1 })], { port: 0, allowRequestTemplates: true });
});

afterAll(async () => {
  delete process.env.LLAMAPEG_PLAN_THREAD_TS;
  await server?.close();
  model?.dispose();
});

const messages = [{ role: "user" as const, content: "hi" }];
let salt = 0;
/** 128 tools of 20 properties (the largest accepted tool count), named anew so no plan cache has them. */
function bigTools() {
  const s = salt++;
  return Array.from({ length: 128 }, (_, i) => ({
    type: "function" as const,
    function: { name: `t${s}_${i}`, description: "d", parameters: { type: "object", properties: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`p${k}`, { type: k % 2 ? "integer" : "string" }])) } },
  }));
}
// runs into the step budget for client templates (chat-route's REQUEST_TEMPLATE_LIMITS)
const slowTemplate = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";

/** A POST on a connection of its own (no keep-alive socket the server may close meanwhile). */
function post(body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}/v1/chat/completions`, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function stallDuring(bodies: string[]): Promise<{ stallMs: number; statuses: number[] }> {
  const monitor = monitorEventLoopDelay({ resolution: 5 });
  monitor.enable();
  try {
    const answers = await Promise.all(bodies.map(post));
    return { stallMs: monitor.max / 1e6, statuses: answers };
  } finally {
    monitor.disable();
  }
}

function inlineMs(fn: () => unknown): number {
  const t0 = performance.now();
  try {
    fn();
  } catch {
    // the budget error is the point
  }
  return performance.now() - t0;
}

it("a cold plan for 128 tools does not hold the event loop", async () => {
  // warm both sides' code paths once (JIT, the planning thread's start)
  await stallDuring([JSON.stringify({ messages, max_tokens: 1, tools: bigTools() })]);
  const inline = inlineMs(() => applyChatTemplate(template, { messages, tools: bigTools() }));
  const { stallMs, statuses } = await stallDuring([JSON.stringify({ messages, max_tokens: 1, tools: bigTools() })]);
  // too long for the 2048-token context: planned and tokenized in full, then refused
  expect(statuses).toEqual([400]);
  console.log(`128 tools: inline plan ${inline.toFixed(0)} ms, event-loop stall during the request ${stallMs.toFixed(0)} ms`);
  expect(stallMs).toBeLessThan(inline / 2);
}, 120_000);

it("slow client templates are refused without holding the event loop", async () => {
  // (the server's render budget for client templates; the capability probe renders with the default one)
  const inline = inlineMs(() => applyChatTemplate(slowTemplate, { messages, template_limits: REQUEST_TEMPLATE_LIMITS }));
  const { stallMs, statuses } = await stallDuring(Array.from({ length: 6 }, () => JSON.stringify({ messages, max_tokens: 1, chat_template: slowTemplate })));
  expect(statuses).toEqual(Array(6).fill(400));
  console.log(`6 slow templates: one inline ${inline.toFixed(0)} ms (6 of them: ${(6 * inline).toFixed(0)} ms), event-loop stall ${stallMs.toFixed(0)} ms`);
  // six budget-long renders on this thread would stall it for all six; one is the upper bound here
  expect(stallMs).toBeLessThan(inline);
}, 120_000);

it("the planning thread returns the same plan as this thread, and its errors with their codes", async () => {
  const worker = new PlanWorker();
  try {
    expect(worker.offThread).toBe(true);
    const tools = bigTools().slice(0, 3);
    const req = { messages, tools };
    const here = applyChatTemplate(template, req);
    const { normalizeApplyRequest } = await import("../../lib/chat/apply/index.js");
    const there = await worker.plan(template, { ...normalizeApplyRequest(req), now: new Date() });
    const { parser: p1, ...rest1 } = here;
    const { parser: p2, ...rest2 } = there;
    expect(rest2).toEqual(rest1);
    expect(p2.toJSON()).toEqual(p1.toJSON());
    // the same shape again: the arena comes by id, the same object as before
    const again = await worker.plan(template, { ...normalizeApplyRequest({ messages: [...messages, { role: "assistant", content: "a" }, { role: "user", content: "b" }], tools }), now: new Date() });
    expect(again.parser).toBe(there.parser);
    expect(again.prompt).not.toBe(there.prompt);
    // a render error keeps its code
    await expect(worker.plan("{% if %}", normalizeApplyRequest({ messages }))).rejects.toMatchObject({ name: "LlamapegError", code: "ERR_TEMPLATE_RENDER" });
  } finally {
    await worker.close();
  }
});
