// The Responses and Messages request mappings (no model): input items and content blocks as chat
// messages, the field contracts, the bounded response store, and error parameters renamed to the
// API's own field names.
import { describe, expect, it } from "vitest";

import { mapMessagesRequest } from "../../../lib/anthropic/request.js";
import { LlamapegError } from "../../../lib/errors.js";
import { mapResponsesRequest, ResponseStore } from "../../../lib/openai/responses/index.js";
import { renameParams } from "../../../lib/server/chat-run.js";

const whereOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return (e as LlamapegError).where;
  }
  throw new Error("expected an error");
};

describe("Responses request mapping", () => {
  it("items become chat messages: reasoning, text and calls of one turn are one assistant message", () => {
    const m = mapResponsesRequest(
      {
        instructions: "sys",
        input: [
          { role: "developer", content: "dev" },
          { role: "user", content: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
          { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "think" }] },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
          { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "42" },
        ],
        max_output_tokens: 5,
        text: { format: { type: "json_schema", name: "x", schema: { type: "object" } } },
        reasoning: { effort: "none" },
        tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
        tool_choice: { type: "function", name: "f" },
      },
      [{ role: "user", content: "earlier" }],
    );
    expect(m.chat.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "earlier" },
      { role: "system", content: "dev" },
      { role: "user", content: "ab" },
      { role: "assistant", content: "ok", reasoning_content: "think", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "42" },
    ]);
    expect(m.turn.length).toBe(4);
    expect(m.chat.max_tokens).toBe(5);
    expect(m.chat.reasoning_effort).toBe("none");
    expect(m.chat.response_format).toEqual({ type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } });
    expect(m.chat.tool_choice).toEqual({ type: "function", function: { name: "f" } });
    expect(m.echo.toolChoice).toEqual({ type: "function", name: "f" });
  });

  it("the field contract names the field", () => {
    expect(whereOf(() => mapResponsesRequest({ input: "x", nope: 1 }))).toBe("nope");
    expect(whereOf(() => mapResponsesRequest({ input: "x", truncation: "auto" }))).toBe("truncation");
    expect(whereOf(() => mapResponsesRequest({}))).toBe("input");
    expect(whereOf(() => mapResponsesRequest({ input: [{ type: "item_reference", id: "x" }] }))).toBe("input[0].type");
    expect(whereOf(() => mapResponsesRequest({ input: "x", text: { verbosity: "low" } }))).toBe("text.verbosity");
    expect(whereOf(() => mapResponsesRequest({ input: "x", reasoning: { effort: "huge" } }))).toBe("reasoning.effort");
    // neutral values of refused fields pass
    expect(mapResponsesRequest({ input: "x", truncation: "disabled", include: [], background: false, store: false }).echo.store).toBe(false);
  });
});

describe("Messages request mapping", () => {
  it("blocks become chat messages: tool results first in a user turn, thinking as reasoning_content", () => {
    const m = mapMessagesRequest({
      model: "m",
      max_tokens: 9,
      system: [{ type: "text", text: "s" }],
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "" }, { type: "text", text: "a" }, { type: "tool_use", id: "u1", name: "f", input: { n: 1 } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "u1", content: [{ type: "text", text: "r" }], is_error: true }, { type: "text", text: "next" }] },
      ],
      tools: [{ name: "f", input_schema: { type: "object" } }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      stop_sequences: ["x"],
      thinking: { type: "disabled" },
    });
    expect(m.chat.messages).toEqual([
      { role: "system", content: "s" },
      { role: "user", content: "q" },
      { role: "assistant", content: "a", reasoning_content: "t", tool_calls: [{ id: "u1", type: "function", function: { name: "f", arguments: '{"n":1}' } }] },
      { role: "tool", tool_call_id: "u1", content: "Error: r" },
      { role: "user", content: "next" },
    ]);
    expect(m.chat.tool_choice).toBe("required");
    expect(m.chat.parallel_tool_calls).toBe(false);
    expect(m.chat.stop).toEqual(["x"]);
    expect(m.chat.reasoning_effort).toBe("none");
    expect(m.stops).toEqual(["x"]);
  });

  it("the field contract names the field", () => {
    const base = { model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] };
    expect(whereOf(() => mapMessagesRequest({ ...base, max_tokens: undefined }))).toBe("max_tokens");
    expect(whereOf(() => mapMessagesRequest({ ...base, mcp_servers: [{}] }))).toBe("mcp_servers");
    expect(whereOf(() => mapMessagesRequest({ ...base, thinking: { type: "enabled", budget_tokens: -1 } }))).toBe("thinking.budget_tokens");
    expect(whereOf(() => mapMessagesRequest({ ...base, tool_choice: { type: "sometimes" } }))).toBe("tool_choice.type");
    expect(whereOf(() => mapMessagesRequest({ ...base, messages: [{ role: "system", content: "x" }] }))).toBe("messages[0].role");
  });
});

describe("the response store and parameter names", () => {
  it("keeps the newest maxEntries, a read making an entry the newest", () => {
    const s = new ResponseStore(2);
    s.set("a", { messages: [] });
    s.set("b", { messages: [] });
    expect(s.get("a")).toBeDefined();
    s.set("c", { messages: [] });
    expect(s.get("b")).toBeUndefined();
    expect(s.get("a")).toBeDefined();
    expect(s.get("c")).toBeDefined();
    expect(s.size).toBe(2);
  });

  it("chat-layer errors are renamed to the API's field", () => {
    const e = renameParams(new LlamapegError("ERR_INVALID_REQUEST", "max_tokens: expected an integer", { where: "max_tokens" }), { max_tokens: "max_output_tokens", messages: "input" }) as LlamapegError;
    expect(e.where).toBe("max_output_tokens");
    expect(e.message).toBe("max_output_tokens: expected an integer");
    const m = renameParams(new LlamapegError("ERR_INVALID_REQUEST", "messages[2].content: bad", { where: "messages[2].content" }), { messages: "input" }) as LlamapegError;
    expect(m.where).toBe("input");
    expect(m.message).toBe("input: as chat messages[2].content: bad");
  });
});
