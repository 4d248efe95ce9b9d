// json_whitespace: the plan's JSON grammar as templates serialize JSON (the default) or with
// llama.cpp's whitespace anywhere ("flexible", and always in reference_mode); the parser reads
// either.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

import { applyChatTemplate, type ApplyChatRequest } from "../../../lib/chat/apply/index.js";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { LlamapegError } from "../../../lib/errors.js";
import { GbnfMatcher } from "../json-schema/json-schema-gbnf-match.js";

const template = readFileSync(join(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
const tool = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city", "days"], additionalProperties: false } },
} as const;
const request = (extra: Record<string, unknown>): ApplyChatRequest =>
  ({
    messages: [{ role: "user", content: "weather?" }],
    tools: [tool],
    tool_choice: { type: "function", function: { name: "get_weather" } },
    ...extra,
  }) as ApplyChatRequest;
const canonical = '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>';
const padded = '<|im_start|>assistant\n<tool_call>\n{"name":"get_weather",\n  "arguments" : { "city":"Paris",\n "days": 3 }}\n</tool_call>';

describe("json_whitespace", () => {
  it("canonical (default) admits the template's layout only; flexible and reference_mode admit any whitespace", () => {
    const cases = [
      [{}, false],
      [{ json_whitespace: "canonical" }, false],
      [{ json_whitespace: "flexible" }, true],
      [{ reference_mode: true, json_whitespace: "canonical" }, true],
    ] as const;
    for (const [extra, paddedOk] of cases) {
      const plan = applyChatTemplate(template, request(extra));
      const m = new GbnfMatcher(plan.grammar!.gbnf);
      expect(m.matches(canonical), JSON.stringify(extra)).toBe(true);
      expect(m.matches(padded), JSON.stringify(extra)).toBe(paddedOk);
    }
  });

  it("the parser reads a padded call under the canonical plan", () => {
    const plan = applyChatTemplate(template, request({}));
    const msg = parseChatOutput(plan, padded.slice("<|im_start|>assistant\n".length));
    expect(msg.tool_calls?.[0]?.function.name).toBe("get_weather");
    expect(JSON.parse(msg.tool_calls![0]!.function.arguments)).toEqual({ city: "Paris", days: 3 });
  });

  it("other values are refused, naming the field", () => {
    let error: unknown;
    try {
      applyChatTemplate(template, request({ json_whitespace: "pretty" }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LlamapegError);
    expect((error as LlamapegError).code).toBe("ERR_INVALID_REQUEST");
    expect((error as LlamapegError).where).toBe("json_whitespace");
  });
});
