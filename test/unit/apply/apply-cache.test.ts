/**
 * Repeated plans (an agent loop: same template, tools, tool_choice, schema; new messages) take
 * everything but the prompt from the plan cache; anything plan-relevant that changes builds anew,
 * and a cached generation prompt is used only where the prompt ends with it.
 */
import fs from "node:fs";
import path from "node:path";

import { beforeEach, describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../../lib/chat/apply/index.js";
import { clearPlanCache } from "../../../lib/chat/apply/cache.js";

const QWEN = fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
const tool = (name: string) => ({ type: "function" as const, function: { name, parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } });
const tools = [tool("get_weather"), tool("get_time")];
const turn = (text: string) => ({ messages: [{ role: "user", content: text }], tools, tool_choice: "auto" as const, now: new Date("2026-01-31T12:00:00Z") });

beforeEach(() => clearPlanCache());

describe("plan cache", () => {
  it("the same request shape with new messages: the cached tree and grammar, a fresh prompt", () => {
    const a = applyChatTemplate(QWEN, turn("Weather in Paris?"));
    const b = applyChatTemplate(QWEN, turn("And in Tokyo?"));
    expect(b.parser).toBe(a.parser);
    expect(b.grammar).toEqual(a.grammar);
    expect(b.prompt).toContain("And in Tokyo?");
    expect(b.prompt).not.toContain("Paris");
    expect(b.promptSegments).not.toEqual(a.promptSegments);
    // a caller's changes to its plan never reach the cache
    a.preservedTokens.push("<mine>");
    a.grammar!.triggers.length = 0;
    a.grammar!.gbnf = "root ::= \"mine\"";
    const c = applyChatTemplate(QWEN, turn("And in Lima?"));
    expect(c.preservedTokens).not.toContain("<mine>");
    expect(c.grammar?.triggers.length).toBeGreaterThan(0);
    expect(c.grammar?.gbnf).toBe(b.grammar?.gbnf);
  });

  it("anything plan-relevant that changes builds a new plan", () => {
    const base = applyChatTemplate(QWEN, turn("x"));
    const variants = [
      { ...turn("x"), tools: [tool("get_weather")] },
      { ...turn("x"), tool_choice: "required" as const },
      { ...turn("x"), parallel_tool_calls: true },
      { ...turn("x"), response_format: { type: "json_object" as const } },
      { ...turn("x"), reasoning_format: "none" as const },
      { ...turn("x"), tool_choice: { type: "function" as const, function: { name: "get_time" } } },
    ];
    for (const v of variants) expect(applyChatTemplate(QWEN, v).parser, JSON.stringify(v).slice(0, 120)).not.toBe(base.parser);
    clearPlanCache();
    expect(applyChatTemplate(QWEN, turn("x")).parser).not.toBe(base.parser);
  });

  it("a cached generation prompt is used only where the prompt ends with it", () => {
    // a generation prompt that changes with the conversation's length
    const counting = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}<A{{ messages | length }}>{% endif %}";
    const one = applyChatTemplate(counting, { messages: [{ role: "user", content: "a" }] });
    const three = applyChatTemplate(counting, {
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
      ],
    });
    expect(one.generationPrompt).toBe("<A1>");
    expect(three.generationPrompt).toBe("<A3>");
    expect(three.prompt.endsWith(three.generationPrompt)).toBe(true);
  });
});
