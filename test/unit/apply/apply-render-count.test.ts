/**
 * A plan renders the template once per prompt it needs: cold, the request's prompt and the one
 * the generation prompt is compared with (add_generation_prompt the other way); warm, with the
 * cached generation prompt at the prompt's end, the request's prompt alone. The renderer is
 * counted where every render goes through (lib/jinja/render.ts); the template analysis's probe
 * conversations and the capability probes are not the request's and are not counted.
 */
import fs from "node:fs";
import path from "node:path";

import { beforeEach, describe, expect, it, vi } from "vitest";

import { applyChatTemplate } from "../../../lib/chat/apply/index.js";
import { clearPlanCache } from "../../../lib/chat/apply/cache.js";
import { renderChatTemplate } from "../../../lib/chat/apply/render.js";

const MARKER = "count-me-7f3a";
const renders = vi.hoisted(() => ({ count: 0 }));

vi.mock("../../../lib/jinja/render.js", async (importOriginal) => {
  const m = await importOriginal<typeof import("../../../lib/jinja/render.js")>();
  const isRequest = (vars: Record<string, unknown>) => Array.isArray(vars.messages) && vars.messages.some((msg) => JSON.stringify(msg).includes(MARKER));
  return {
    ...m,
    renderTemplate: (...args: Parameters<typeof m.renderTemplate>) => {
      if (isRequest(args[1])) renders.count++;
      return m.renderTemplate(...args);
    },
    renderTemplateMarked: (...args: Parameters<typeof m.renderTemplateMarked>) => {
      if (isRequest(args[1])) renders.count++;
      return m.renderTemplateMarked(...args);
    },
  };
});

const template = (name: string) => fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates", name), "utf8");
const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const now = new Date("2026-01-31T12:00:00Z");

function countRenders(f: () => unknown): number {
  renders.count = 0;
  f();
  return renders.count;
}

beforeEach(() => clearPlanCache());

describe("renders per plan", () => {
  const templates = [
    ["a family's template", "Qwen3-Coder.jinja"],
    ["a template taking the analysis path", "Qwen-Qwen2.5-7B-Instruct.jinja"],
    ["GPT-OSS (its prompt is changed after the render)", "openai-gpt-oss-120b.jinja"],
  ] as const;

  for (const [what, file] of templates) {
    it(`${what}: twice cold, once warm`, () => {
      const src = template(file);
      const first = [{ role: "user", content: `Weather in Paris? ${MARKER}` }];
      expect(countRenders(() => applyChatTemplate(src, { messages: first, tools, now }))).toBe(2);
      const next = [...first, { role: "assistant", content: "Sunny." }, { role: "user", content: "And Tokyo?" }];
      expect(countRenders(() => applyChatTemplate(src, { messages: next, tools, now }))).toBe(1);
    });
  }

  it("without the generation prompt: twice cold (the prompt, then the one with it)", () => {
    const src = template("Qwen3-Coder.jinja");
    const messages = [
      { role: "user", content: `Hi ${MARKER}` },
      { role: "assistant", content: "Hello." },
    ];
    const plan = countRenders(() => applyChatTemplate(src, { messages, add_generation_prompt: false, now }));
    expect(plan).toBe(2);
  });

  it("renderChatTemplate renders once", () => {
    const src = template("Qwen3-Coder.jinja");
    expect(countRenders(() => renderChatTemplate(src, { messages: [{ role: "user", content: MARKER }], tools, now }))).toBe(1);
  });
});
