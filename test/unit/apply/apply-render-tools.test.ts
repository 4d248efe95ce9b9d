/**
 * renderChatTemplate and applyChatTemplate check a request's tools with the same validator
 * (normalizeApplyRequest): a tool name that one refuses, the other refuses with the same code,
 * `where` and message. The old renderChatTemplate took any string as a name ("get weather"
 * included) while applyChatTemplate refused it (issue 26).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { applyChatTemplate } from "../../../lib/chat/apply/index.js";
import { renderChatTemplate } from "../../../lib/chat/apply/render.js";
import { LlamapegError } from "../../../lib/errors.js";

const TOOLS_THINK = fs.readFileSync(path.resolve(import.meta.dirname, "../../fixtures/apply/tools-think.jinja"), "utf8");
const messages = [{ role: "user", content: "Weather in Paris?" }];
const tool = (name: unknown) => ({ type: "function" as const, function: { name, parameters: { type: "object", properties: { city: { type: "string" } } } } });

function errorOf(f: () => unknown): LlamapegError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
  throw new Error("expected an error");
}

describe("renderChatTemplate and applyChatTemplate refuse the same tool names", () => {
  const cases: [string, unknown[], string][] = [
    ["a space (the old renderChatTemplate accepted it)", [tool("get weather")], "tools[0].function.name"],
    ["empty", [tool("")], "tools[0].function.name"],
    ["65 characters", [tool("a".repeat(65))], "tools[0].function.name"],
    ["a character outside a-z A-Z 0-9 _ . -", [tool("météo")], "tools[0].function.name"],
    ["not a string", [tool(42)], "tools[0].function.name"],
    ["a duplicate", [tool("get_weather"), tool("get_weather")], "tools[1].function.name"],
  ];
  for (const [what, tools, where] of cases) {
    it(`${what}: same code, where and message`, () => {
      const rendered = errorOf(() => renderChatTemplate(TOOLS_THINK, { messages, tools }));
      const applied = errorOf(() => applyChatTemplate(TOOLS_THINK, { messages, tools: tools as never }));
      expect([rendered.code, rendered.where]).toEqual(["ERR_INVALID_REQUEST", where]);
      expect([applied.code, applied.where, applied.message]).toEqual([rendered.code, rendered.where, rendered.message]);
    });
  }

  it("a valid name passes both", () => {
    const tools = [tool("get_weather.v2-x")];
    expect(renderChatTemplate(TOOLS_THINK, { messages, tools })).toContain("Tools: get_weather.v2-x ");
    expect(applyChatTemplate(TOOLS_THINK, { messages, tools }).prompt).toContain("Tools: get_weather.v2-x ");
  });
});
