/** normalizeApplyRequest: defaults, response_format forms, and errors naming the field. */
import { describe, expect, it } from "vitest";
import { normalizeApplyRequest } from "../../../lib/chat/apply/request.js";
import { LlamapegError } from "../../../lib/errors.js";

const messages = [{ role: "user", content: "hi" }];
const schema = { type: "object", properties: { a: { type: "integer" } } };

describe("normalizeApplyRequest", () => {
  it("defaults as llama.cpp's inputs, reasoning extracted", () => {
    const r = normalizeApplyRequest({ messages });
    expect(r).toMatchObject({
      tools: null,
      toolChoice: "auto",
      parallelToolCalls: false,
      jsonSchema: null,
      addGenerationPrompt: true,
      grammar: "",
      reasoningFormat: "auto",
      enableThinking: true,
      bosToken: "",
      eosToken: "",
    });
    expect(r.now).toBeInstanceOf(Date);
  });

  it("reads every response_format form; json_schema wins; json_object means a JSON object; an empty json_schema field constrains nothing", () => {
    expect(normalizeApplyRequest({ messages, response_format: { type: "json_schema", json_schema: { schema } } }).jsonSchema).toEqual(schema);
    expect(normalizeApplyRequest({ messages, response_format: { type: "json_object", schema } }).jsonSchema).toEqual(schema);
    expect(normalizeApplyRequest({ messages, response_format: { type: "json_object" } }).jsonSchema).toEqual({ type: "object" });
    expect(normalizeApplyRequest({ messages, response_format: { type: "json_schema", json_schema: {} } }).jsonSchema).toEqual({ type: "object" });
    expect(normalizeApplyRequest({ messages, json_schema: {} }).jsonSchema).toBeNull();
    expect(normalizeApplyRequest({ messages, response_format: { type: "text" } }).jsonSchema).toBeNull();
    expect(normalizeApplyRequest({ messages, json_schema: JSON.stringify(schema) }).jsonSchema).toEqual(schema);
    expect(normalizeApplyRequest({ messages, json_schema: { type: "string" }, response_format: { type: "json_object", schema } }).jsonSchema).toEqual({ type: "string" });
  });

  it("enable_thinking falls back to chat_template_kwargs.enable_thinking, as the server does", () => {
    expect(normalizeApplyRequest({ messages, chat_template_kwargs: { enable_thinking: false } }).enableThinking).toBe(false);
    expect(normalizeApplyRequest({ messages, enable_thinking: true, chat_template_kwargs: { enable_thinking: false } }).enableThinking).toBe(true);
    expect(() => normalizeApplyRequest({ messages, chat_template_kwargs: { enable_thinking: "no" } })).toThrow(/chat_template_kwargs.enable_thinking/);
  });

  it("tools: absent is null, an empty array stays empty", () => {
    expect(normalizeApplyRequest({ messages, tools: [] }).tools).toEqual([]);
    expect(normalizeApplyRequest({ messages, tools: null }).tools).toBeNull();
  });

  it("errors name the field", () => {
    const where = (req: unknown): string | undefined => {
      try {
        normalizeApplyRequest(req as never);
      } catch (e) {
        expect(e).toBeInstanceOf(LlamapegError);
        expect((e as LlamapegError).code).toBe("ERR_INVALID_REQUEST");
        return (e as LlamapegError).where;
      }
      return undefined;
    };
    expect(where(null)).toBe("request");
    expect(where({ messages, json_schema: "{not json" })).toBe("json_schema");
    expect(where({ messages, json_schema: [1] })).toBe("json_schema");
    expect(where({ messages, response_format: { type: "json_schema", json_schema: 3 } })).toBe("response_format.json_schema");
    expect(where({ messages, tools: [{ type: "retrieval" }] })).toBe("tools[0].type");
    expect(where({ messages, tools: [{ type: "function", function: { name: "f", parameters: "x" } }] })).toBe("tools[0].function.parameters");
    expect(where({ messages, grammar: 5 })).toBe("grammar");
    expect(where({ messages, tools: [{ type: "function", function: { name: "f" } }], tool_choice: "required", grammar: "root ::= \"a\"" })).toBe("grammar");
  });
});
