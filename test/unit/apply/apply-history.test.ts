/**
 * A conversation holding an earlier answer of the model can always be sent again: a call cut by
 * max_tokens (arguments a prefix of JSON), arguments that are no JSON at all, the raw markup a
 * parse failure kept as content. On every vendored template where the same conversation with
 * valid arguments renders, these render too, with a warning where the template reads arguments
 * as objects. Plus the repair of cut JSON itself.
 */
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../../lib/chat/apply/index.js";
import { closeCutJson } from "../../../lib/chat/partial-json.js";
import { LlamapegError } from "../../../lib/errors.js";

const TEMPLATES = path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates");
const templates = fs.readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja")).sort();
const WEATHER = {
  type: "function" as const,
  function: { name: "get_weather", parameters: { type: "object", properties: { location: { type: "string" }, days: { type: "integer" } }, required: ["location"] } },
};

function conversation(args: string | null, content: string | null = null) {
  const answer = args === null ? { role: "assistant", content } : { role: "assistant", content, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: args } }] };
  return {
    messages: [{ role: "user", content: "What is the weather in Paris?" }, answer, { role: "user", content: "And in Tokyo?" }],
    tools: [WEATHER],
    now: new Date("2026-01-31T12:00:00Z"),
  };
}

const tryApply = (source: string, request: ReturnType<typeof conversation>) => {
  try {
    return applyChatTemplate(source, request);
  } catch (e) {
    if (!(e instanceof LlamapegError)) throw e;
    return e;
  }
};

describe("closeCutJson", () => {
  it("closes a cut object where it stands and drops a dangling key, separator or literal", () => {
    expect(closeCutJson('{"a": 1}')).toEqual({ text: '{"a": 1}', closed: false });
    expect(closeCutJson('{"location": "Par')).toEqual({ text: '{"location": "Par"}', closed: true });
    expect(closeCutJson('{"a": [1, {"b": "x\\\\"')).toEqual({ text: '{"a": [1, {"b": "x\\\\"}]}', closed: true });
    expect(closeCutJson('{"a": 1, "b"')?.text).toBe('{"a": 1}');
    expect(closeCutJson('{"a": tru')?.text).toBe("{}");
    expect(closeCutJson('{"a": "\\u00')?.text).toBe('{"a": ""}');
    expect(closeCutJson("{")).toEqual({ text: "{}", closed: true });
    expect(closeCutJson("location=Paris")).toBeUndefined();
    expect(closeCutJson('{"a": 1}}')).toBeUndefined();
  });
});

describe("history with earlier answers of the model", () => {
  for (const file of templates) {
    it(file.replace(/\.jinja$/, ""), () => {
      const source = fs.readFileSync(path.join(TEMPLATES, file), "utf8");
      const valid = tryApply(source, conversation('{"location": "Paris"}'));
      if (valid instanceof LlamapegError) return; // this conversation does not render here anyway
      const cut = tryApply(source, conversation('{"location": "Par'));
      const text = tryApply(source, conversation("location=Paris"));
      const markup = tryApply(source, conversation(null, '<tool_call>\n{"name": "get_weather", "arguments": {"loca'));
      for (const [name, plan] of [["cut call", cut], ["non-JSON arguments", text], ["parse-failure content", markup]] as const) {
        expect(plan, `${name}: ${plan instanceof LlamapegError ? plan.message : ""}`).not.toBeInstanceOf(LlamapegError);
      }
      const warned = (cut as { warnings: string[] }).warnings.join("\n");
      if (warned !== "") expect(warned).toMatch(/messages\[1\]\.tool_calls\[0\]\.function\.arguments: a cut JSON object; the template gets it closed as \{"location": "Par"\}/);
    });
  }
});
