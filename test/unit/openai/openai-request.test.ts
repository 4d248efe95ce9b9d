// Request checks, OpenAI error bodies, schema degradation, stop strings and SSE: no model needed.
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { compileJsonSchema } from "../../../lib/json-schema/index.js";
import { normalizeChatRequest, toOpenAIError, validateJson, writeSSE, type ChatCompletionChunk } from "../../../lib/openai/index.js";
import { StopMatcher } from "../../../lib/openai/stops.js";
import { sanitizeToolSchemas } from "../../../lib/chat/apply/schemas.js";

const user = [{ role: "user", content: "hi" }];
const tool = (name: string, parameters: Record<string, unknown> = { type: "object" }) => ({ type: "function" as const, function: { name, parameters } });

function paramOf(req: unknown): string | null {
  try {
    normalizeChatRequest(req as never);
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    const body = toOpenAIError(e);
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.code).toBe("ERR_INVALID_REQUEST");
    return body.error.param;
  }
  return null;
}

describe("request checks", () => {
  it("names the field of each rejection", () => {
    expect(paramOf({ messages: [{ role: "robot", content: "x" }] })).toBe("messages[0].role");
    expect(paramOf({ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "1", type: "function", function: { arguments: "{}" } }] }] })).toBe(
      "messages[0].tool_calls[0].function.name",
    );
    expect(paramOf({ messages: [...user, { role: "tool", tool_call_id: "x", content: "r" }] })).toBe("messages[1].tool_call_id");
    expect(paramOf({ messages: [...user, { role: "tool", content: "r" }] })).toBe("messages[1].tool_call_id");
    expect(paramOf({ messages: user, tools: [tool("a")], tool_choice: "maybe" })).toBe("tool_choice");
    expect(paramOf({ messages: user, tools: [tool("a")], tool_choice: { type: "function", function: { name: "b" } } })).toBe("tool_choice.function.name");
    expect(paramOf({ messages: user, tool_choice: "required" })).toBe("tool_choice");
    expect(paramOf({ messages: user, tools: [tool("a b")] })).toBe("tools[0].function.name");
    expect(paramOf({ messages: user, tools: [tool("a"), tool("a")] })).toBe("tools[1].function.name");
    expect(paramOf({ messages: user, response_format: { type: "json_schema", json_schema: { schema: { type: "object", properties: { a: { type: 5 } } } } } })).toBe(
      "response_format.json_schema.schema",
    );
    expect(paramOf({ messages: user, response_format: { type: "yaml" } })).toBe("response_format.type");
    expect(paramOf({ messages: user, temperature: 3 })).toBe("temperature");
    expect(paramOf({ messages: user, max_tokens: 0 })).toBe("max_tokens");
    expect(paramOf({ messages: user, stop: ["a", "b", "c", "d", "e"] })).toBe("stop");
    expect(paramOf({ messages: user, n: 0 })).toBe("n");
    expect(paramOf({ messages: user, n: 129 })).toBe("n");
    expect(paramOf({ messages: [] })).toBe("messages");
  });

  it("accepts a tool message that answers an earlier call, and defaults", () => {
    const r = normalizeChatRequest({
      messages: [...user, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "a", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "ok" }],
      tools: [tool("a")],
      tool_choice: { type: "function", function: { name: "a" } },
      stop: "END",
    });
    expect(r.chat).toMatchObject({ toolChoice: "required", namedTool: "a", callsOnly: true, parallelToolCalls: false });
    expect(r).toMatchObject({ stop: ["END"], stream: false });
    // required means a call: calls only unless the request opts in to text first
    expect(normalizeChatRequest({ messages: user, tools: [tool("a")], tool_choice: "required" }).chat.callsOnly).toBe(true);
    expect(normalizeChatRequest({ messages: user, tools: [tool("a")], tool_choice: "required", calls_only: false }).chat.callsOnly).toBe(false);
  });

  it("other errors are server errors in the same shape", () => {
    expect(toOpenAIError(new Error("boom"))).toEqual({ error: { message: "boom", type: "server_error", param: null, code: null } });
  });
});

describe("tool schemas that cannot be compiled", () => {
  it("drop unenforceable keywords with a warning, and make an invalid schema permissive for that tool only", () => {
    const good = { type: "object", properties: { n: { type: "integer" } } };
    const warnings: string[] = [];
    const tools = sanitizeToolSchemas([
      tool("ok", good),
      tool("loose", { type: "object", properties: { e: { type: "string", not: { const: "x" } } } }),
      tool("broken", { type: "object", properties: { e: { type: 5 } } }),
    ], warnings, "reference");
    expect(tools[0]!.function.parameters).toEqual(good);
    expect(tools[1]!.function.parameters).toEqual({ type: "object", properties: { e: { type: "string" } } });
    expect(tools[2]!.function.parameters).toEqual({ type: "object" });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/loose.*not enforced.*not/);
    expect(warnings[1]).toMatch(/broken.*unknown type 5.*any JSON object/);
    for (const t of tools) expect(() => compileJsonSchema(t.function.parameters!, { schemaMode: "reference" })).not.toThrow();
  });

  it("the default compiler (outside reference_mode) keeps what it enforces and drops only the rest", () => {
    const notX = { type: "object", properties: { e: { type: "string", not: { const: "x" } } } };
    const unique = { type: "object", properties: { u: { type: "array", items: { type: "string" }, uniqueItems: true } } };
    const warnings: string[] = [];
    const tools = sanitizeToolSchemas([tool("not", notX), tool("unique", unique)], warnings);
    expect(tools[0]!.function.parameters).toEqual(notX);
    expect(tools[1]!.function.parameters).toEqual({ type: "object", properties: { u: { type: "array", items: { type: "string" } } } });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/unique.*not enforced.*uniqueItems/);
  });
});

describe("stop strings", () => {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  function run(stops: string[], pieces: string[]): { text: string; matched: string | null } {
    const m = new StopMatcher(stops);
    const out: Uint8Array[] = [];
    for (const p of pieces) for (const h of m.push(enc.encode(p), 1)) out.push(h.bytes);
    for (const h of m.flush()) out.push(h.bytes);
    return { text: out.map((b) => dec.decode(b, { stream: true })).join(""), matched: m.matched };
  }
  it("cuts at a stop string split across pieces and never releases it", () => {
    expect(run(["STOP"], ["abc S", "TO", "P tail"])).toEqual({ text: "abc ", matched: "STOP" });
    expect(run(["STOP"], ["abc ST", "x"])).toEqual({ text: "abc STx", matched: null });
    // the earliest stop string wins
    expect(run(["b", "abc"], ["xabc"])).toEqual({ text: "x", matched: "abc" });
    expect(run([], ["a", "b"])).toEqual({ text: "ab", matched: null });
  });
  it("works inside multi-byte characters split across pieces", () => {
    const bytes = enc.encode("héllo→wörld");
    const m = new StopMatcher(["→"]);
    const out: number[] = [];
    for (let i = 0; i < bytes.length; i++) for (const h of m.push(bytes.subarray(i, i + 1), i)) out.push(...h.bytes);
    expect(dec.decode(new Uint8Array(out))).toBe("héllo");
  });
});

describe("SSE", () => {
  it("writes data lines then [DONE]; an error becomes an OpenAI error event", async () => {
    const out: string[] = [];
    const chunk = { id: "x", object: "chat.completion.chunk" } as unknown as ChatCompletionChunk;
    await writeSSE((async function* () { yield chunk; })(), { write: (t: string) => out.push(t) });
    expect(out).toEqual([`data: ${JSON.stringify(chunk)}\n\n`, "data: [DONE]\n\n"]);
    const err: string[] = [];
    const failing = (async function* () {
      yield chunk;
      throw new LlamapegError("ERR_ABORTED", "stopped");
    })();
    await expect(writeSSE(failing, { write: (t: string) => err.push(t) })).rejects.toThrow("stopped");
    expect(JSON.parse(err[1]!.slice(6))).toEqual({ error: { message: "stopped", type: "server_error", param: null, code: "ERR_ABORTED" } });
  });
});

describe("validateJson", () => {
  it("checks the common keywords", () => {
    const s = { type: "object", properties: { a: { type: "integer", minimum: 1 }, b: { enum: ["x"] } }, required: ["a"], additionalProperties: false };
    expect(validateJson({ a: 2, b: "x" }, s)).toEqual([]);
    expect(validateJson({ a: 0, c: 1 }, s)).toHaveLength(2);
    expect(validateJson({ b: "y" }, s)).toHaveLength(2);
  });
});
