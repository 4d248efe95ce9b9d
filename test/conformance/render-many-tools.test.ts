// Many tools, rendered again and again (an agent loop): our prompt equals what llama.cpp's
// common_chat_templates_apply returns, on every vendored template, for the first render (tools
// converted), the next ones (converted tools and their JSON reused, lib/jinja/reuse.ts) and after
// the caller changed one tool in place (which must show).
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { renderChatTemplate } from "../../lib/chat/apply/render.js";
import { sized } from "../support/full.js";
import { getHarness, type Harness } from "../support/harness.js";

process.env.TZ = "UTC";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TEMPLATES = path.join(ROOT, "vendor/llama.cpp/models/templates");
const NOW = "2026-01-31T12:00:00Z";
const N_TOOLS = sized(24, 80); // LLAMAPEG_FULL=1: 80

const templates = fs
  .readdirSync(TEMPLATES)
  .filter((f) => f.endsWith(".jinja"))
  .sort();

/** Realistic tools: strings with quotes, newlines and non-ASCII, bounds, enums, nested objects. */
function tools(n: number): Record<string, any>[] {
  return Array.from({ length: n }, (_, i) => ({
    type: "function",
    function: {
      name: `tool_${i}`,
      description: `Tool ${i}: looks up "weather" in a city <é>\nand a date range. `,
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "the city" },
          days: { type: "integer", minimum: 1, maximum: 14 },
          ratio: { type: "number", minimum: 0.5 },
          unit: { enum: ["celsius", "fahrenheit"] },
          tags: { type: "array", items: { type: "string" }, maxItems: 5 },
          window: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from"] },
        },
        required: ["city"],
      },
    },
  }));
}

const messages = (k: number): Record<string, unknown>[] => [
  { role: "system", content: "You are a helpful assistant." },
  ...Array.from({ length: k }, (_, j) => [
    { role: "user", content: `Question ${j}?` },
    { role: "assistant", content: `Answer ${j}.` },
  ]).flat(),
  { role: "user", content: `Question ${k}?` },
];

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(async () => {
  await h?.close();
});

describe(`render parity with ${N_TOOLS} tools, render after render`, () => {
  let compared = 0;
  for (const t of templates) {
    it(t, async () => {
      const source = fs.readFileSync(path.join(TEMPLATES, t), "utf8");
      const set = tools(N_TOOLS);
      const turns: [number, () => void][] = [
        [0, () => {}],
        [1, () => {}],
        [2, () => (set[7]!.function.description = "changed in place")],
        [3, () => (set[3]!.function.parameters.properties.days.maximum = 30)],
      ];
      for (const [k, edit] of turns) {
        edit();
        const request = { messages: messages(k), tools: set, add_generation_prompt: true };
        const ref = await h.request<{ prompt: string }>("chat.templates_apply", { template: source, bos_token: "<s>", eos_token: "</s>", request: { ...request, now: NOW } });
        if (!ref.ok) return; // the reference refuses this template with tools: parity is render-parity's business
        const ours = renderChatTemplate(source, { ...request, bos_token: "<s>", eos_token: "</s>", now: new Date(NOW), reference_mode: true });
        expect(ours === ref.result!.prompt, `${t}, turn ${k}`).toBe(true);
      }
      compared++;
    });
  }
  it("compared most templates", () => {
    expect(compared).toBeGreaterThanOrEqual(50);
  });
});
