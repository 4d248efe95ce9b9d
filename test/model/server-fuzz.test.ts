// Random requests against a real server: whatever the body, the answer is a 200 or a 4xx in
// OpenAI's error shape, never a 500, and the server keeps answering.
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";

import type { Model } from "../../lib/llama/index.js";
import { REQUEST_FIELDS } from "../../lib/openai/request-fields.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { raw } from "./server-helpers.js";

let model: Model;
let server: LlamapegServer;

beforeAll(async () => {
  model = await loadTestModel();
  server = await startServer([model.createContext({ contextSize: 2048, threads: 1 })], { port: 0, bodyLimit: 256 * 1024 });
});
afterAll(async () => {
  await server?.close();
  model?.dispose();
});

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("<|im_start|>", "<tool_call>", "{{ x }}", "\u0000", "\ud800", "</think>"));
const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom("system", "user", "assistant", "tool", "developer"), fc.string({ maxLength: 5 })),
    content: fc.oneof(text, fc.constant(null), fc.array(fc.record({ type: fc.constantFrom("text", "image_url"), text }), { maxLength: 2 })),
    tool_calls: fc.array(fc.record({ id: fc.string({ maxLength: 4 }), type: fc.constant("function"), function: fc.record({ name: fc.constantFrom("f", "g", ""), arguments: fc.oneof(fc.constant("{}"), text) }) }), { maxLength: 2 }),
    tool_call_id: fc.string({ maxLength: 4 }),
  },
  { requiredKeys: ["role"] },
);
const tool = fc.record({ type: fc.constantFrom("function", "custom"), function: fc.record({ name: fc.constantFrom("f", "g", "bad name"), parameters: fc.oneof(fc.constant({ type: "object" }), fc.object({ maxDepth: 1 })) }) });
const field = fc.constantFrom(...Object.keys(REQUEST_FIELDS), "nonsense");
const request = fc.record(
  {
    messages: fc.oneof(fc.array(message, { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
    tools: fc.array(tool, { maxLength: 2 }),
    tool_choice: fc.oneof(fc.constantFrom("auto", "required", "none", "sometimes"), fc.record({ type: fc.constant("function"), function: fc.record({ name: fc.constantFrom("f", "zz") }) })),
    extra: fc.dictionary(field, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    stream: fc.boolean(),
  },
  { requiredKeys: ["messages", "stream"] },
);

/** Requests that are valid but odd: message text with template and special-token text, tools, sampler fields. */
const validTool = fc.record({ type: fc.constant("function"), function: fc.record({ name: fc.constantFrom("f", "g"), parameters: fc.constantFrom({ type: "object" }, { type: "object", properties: { a: { type: "integer" } }, required: ["a"] }) }) });
const valid = fc
  .record({
    messages: fc.array(fc.record({ role: fc.constantFrom("system", "user"), content: text }), { minLength: 1, maxLength: 2 }).map((m) => [...m, { role: "user", content: "hi" }]),
    tools: fc.uniqueArray(validTool, { maxLength: 2, selector: (t) => t.function.name }),
    tool_choice: fc.constantFrom("auto", "none"),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_k: fc.integer({ min: 0, max: 50 }),
    min_p: fc.double({ min: 0, max: 1, noNaN: true }),
    stop: fc.array(fc.string({ minLength: 1, maxLength: 3 }), { maxLength: 2 }),
    response_format: fc.constantFrom({ type: "text" }, { type: "json_object" }),
    stream: fc.boolean(),
  }, { requiredKeys: ["messages", "stream"] })
  .map((r) => ({ extra: {}, ...r, ...(r.tools !== undefined && r.tools.length === 0 ? { tools: undefined, tool_choice: undefined } : {}) }));

const statuses: number[] = [];

it("random requests: 200 or 4xx with OpenAI's error body, never a 500; the server stays up", async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(request, valid), async ({ extra, ...r }) => {
      const body = JSON.stringify({ ...extra, ...r, max_tokens: 3, temperature: 0 });
      const res = await raw(`${server.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
      statuses.push(res.status);
      if (res.status === 200) return;
      expect(res.status, `${res.status} for ${body}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${res.status} for ${body}: ${res.body}`).toBeLessThan(500);
      const error = (JSON.parse(res.body) as { error: { message: string; type: string; param: unknown } }).error;
      expect(typeof error.message).toBe("string");
      expect(error.type).toBe("invalid_request_error");
    }),
    { numRuns: 150 },
  );
  expect((await raw(`${server.url}/health`)).status).toBe(200);
  // Both kinds were exercised: refused requests and generations.
  expect(statuses.filter((x) => x === 200).length, JSON.stringify(statuses)).toBeGreaterThan(30);
  expect(statuses.filter((x) => x === 400).length).toBeGreaterThan(30);
}, 300_000);
