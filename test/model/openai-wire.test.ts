// Wire check: the chunks, served as SSE from a local endpoint, consumed by the official `openai`
// client's stream helpers, assemble into the same tool calls as the non-stream completion.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { createChatCompletion, toOpenAIError, writeSSE, type ChatCompletionRequest } from "../../lib/openai/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
let context: Context;
let server: Server;
let baseURL: string;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 2048, threads: 2 });
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      void (async () => {
        try {
          const request = JSON.parse(body) as ChatCompletionRequest;
          if (request.stream === true) {
            const chunks = createChatCompletion(context, { ...request, stream: true });
            res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
            await writeSSE(chunks, res);
          } else {
            const c = await createChatCompletion(context, { ...request, stream: false });
            res.writeHead(200, { "content-type": "application/json" });
            res.write(JSON.stringify(c));
          }
        } catch (e) {
          if (!res.headersSent) res.writeHead(400, { "content-type": "application/json" });
          res.write(JSON.stringify(toOpenAIError(e)));
        }
        res.end();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  model?.dispose();
});

const tools = [
  { type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } },
  { type: "function" as const, function: { name: "say", parameters: { type: "object", properties: { w: { enum: ["yes", "no"] } }, required: ["w"], additionalProperties: false } } },
];

it("the openai client's stream helper assembles the same tool calls", async () => {
  const client = new OpenAI({ apiKey: "local", baseURL, maxRetries: 0 });
  const request = {
    model: "tiny",
    messages: [{ role: "user" as const, content: "Pick a number" }],
    tools,
    tool_choice: { type: "function" as const, function: { name: "pick" } },
    seed: 7,
    max_tokens: 60,
  };
  const whole = await createChatCompletion(context, request);
  const stream = client.chat.completions.stream(request);
  const names: string[] = [];
  stream.on("tool_calls.function.arguments.done", (e) => names.push(e.name));
  const final = await stream.finalChatCompletion();
  const got = final.choices[0]!.message.tool_calls!.map((t) => (t.type === "function" ? { name: t.function.name, arguments: t.function.arguments } : null));
  expect(got).toEqual(whole.choices[0].message.tool_calls!.map((t) => ({ name: t.function.name, arguments: t.function.arguments })));
  expect(got.length).toBeGreaterThan(0);
  expect(names).toEqual(got.map((g) => g!.name));
  expect(final.choices[0]!.finish_reason).toBe(whole.choices[0].finish_reason);
  for (const t of final.choices[0]!.message.tool_calls!) expect(t.id).toMatch(/^call_/);

  // A bad request comes back as OpenAI's error, which the client raises as a BadRequestError.
  const bad = await client.chat.completions.create({ ...request, tool_choice: "sometimes" as never }).catch((e: unknown) => e);
  expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
  expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("tool_choice");
});
