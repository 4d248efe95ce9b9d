// `reference_mode` from an OpenAI request to the chat plan (issue 22): normalizeChatRequest keeps
// it, createChatCompletion builds the reference-identical plan from it, and the HTTP server passes
// it through. No model: a scripted CompletionTarget answers with a Qwen3-Coder call whose boolean
// argument is written as the template prints it (`True`), which only the default plan reads.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { createChatCompletion } from "../../../lib/openai/completion.js";
import { normalizeChatRequest } from "../../../lib/openai/index.js";
import type { CompletionTarget, TargetRequest } from "../../../lib/openai/target.js";
import { startServer } from "../../../lib/server/server.js";

const template = readFileSync(join(import.meta.dirname, "..", "..", "..", "vendor", "llama.cpp", "models", "templates", "Qwen3-Coder.jinja"), "utf8");
const tools = [{ type: "function" as const, function: { name: "f", parameters: { type: "object", properties: { on: { type: "boolean" } }, required: ["on"] } } }];
const messages = [{ role: "user", content: "hi" }];
const output = ["<tool_call>\n<function=f>\n", "<parameter=on>\nTrue\n</parameter>\n", "</function>\n</tool_call>"];
const encoder = new TextEncoder();

function scripted(): { target: CompletionTarget; requests: TargetRequest[] } {
  const requests: TargetRequest[] = [];
  const target: CompletionTarget = {
    chatInfo: () => ({ name: "scripted", chatTemplate: template, bos: "", eos: "<|im_end|>" }),
    generate(request) {
      requests.push(request);
      return {
        async *[Symbol.asyncIterator]() {
          for (const [i, p] of output.entries()) yield { token: i, piece: encoder.encode(p) };
        },
        abort() {},
        async result() {
          return { stats: { promptTokens: 1, reusedTokens: 0, generatedTokens: output.length, promptMs: 0, generateMs: 0, sampleMs: 0, stopReason: "eog" as const } };
        },
      };
    },
  };
  return { target, requests };
}

describe("reference_mode in OpenAI requests", () => {
  it("normalizeChatRequest passes it to the plan request (default false) and checks its type", () => {
    expect(normalizeChatRequest({ messages, reference_mode: true }).chat.referenceMode).toBe(true);
    expect(normalizeChatRequest({ messages }).chat.referenceMode).toBe(false);
    expect(() => normalizeChatRequest({ messages, reference_mode: "yes" as never })).toThrow(/reference_mode/);
  });

  it("createChatCompletion builds the reference plan: its grammar, and its parser drops the Python literal", async () => {
    const ours = scripted();
    const c = await createChatCompletion(ours.target, { messages, tools });
    expect(JSON.parse(c.choices[0].message.tool_calls![0]!.function.arguments)).toEqual({ on: true });

    const ref = scripted();
    const r = await createChatCompletion(ref.target, { messages, tools, reference_mode: true });
    expect(ref.requests[0]!.grammar!.gbnf).not.toBe(ours.requests[0]!.grammar!.gbnf);
    expect(ours.requests[0]!.grammar!.gbnf).toContain("True");
    expect(ref.requests[0]!.grammar!.gbnf).not.toContain("True");
    // as llama.cpp: the final parse drops the value the reference grammar does not take, and the
    // call streamed so far goes out as it stood (not JSON, unflagged: the reference's behaviour)
    expect(r.choices[0].message.tool_calls!.map((t) => t.function.arguments)).toEqual(["{"]);
  });

  it("the server passes it through to the plan", async () => {
    const ours = scripted();
    const server = await startServer([ours.target], { port: 0 });
    try {
      const post = async (body: Record<string, unknown>) => {
        const res = await fetch(`http://127.0.0.1:${server.port}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        expect(res.status).toBe(200);
        return (await res.json()) as { choices: { message: { tool_calls?: { function: { arguments: string } }[] } }[] };
      };
      const a = await post({ messages, tools });
      expect(JSON.parse(a.choices[0]!.message.tool_calls![0]!.function.arguments)).toEqual({ on: true });
      const b = await post({ messages, tools, reference_mode: true });
      expect(b.choices[0]!.message.tool_calls!.map((t) => t.function.arguments)).toEqual(["{"]);
      expect(ours.requests).toHaveLength(2);
      expect(ours.requests[1]!.grammar!.gbnf).not.toBe(ours.requests[0]!.grammar!.gbnf);
    } finally {
      await server.close();
    }
  });
});
