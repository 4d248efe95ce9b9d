// The mask engine in generation, on the tiny random-weight model (every token is a candidate for
// rejection): the same tokens as with llama.cpp's full pass, greedy and seeded, sampling first or
// constraining first, for a JSON grammar and a chat plan's tool-call grammar.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import type { Context, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { FULL } from "../support/full.js";

let model: Model;
let context: Context;
let prompt: Int32Array;
const smallJson = readFileSync(join(import.meta.dirname, "fixtures", "small-json.gbnf"), "utf8");
const benchJson = readFileSync(join(import.meta.dirname, "..", "..", "scripts", "bench", "json.gbnf"), "utf8");

const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  },
};

function toolGrammar(): string {
  const template = readFileSync(join(import.meta.dirname, "..", "..", "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
  const plan = applyChatTemplate(template, { messages: [{ role: "user", content: "Weather?" }], tools: [WEATHER], tool_choice: "required" } as never);
  expect(plan.grammar?.gbnf.length).toBeGreaterThan(0);
  return plan.grammar!.gbnf;
}

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nAnswer<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterAll(() => {
  model?.dispose();
});

describe("mask engine in generation", () => {
  it("gives llama.cpp's full-pass tokens: JSON grammars and a tool-call plan, greedy and seeded, sample-first and grammar-first", async () => {
    const grammars = { smallJson, benchJson, tools: toolGrammar() };
    let compared = 0;
    const settings = [[0, 0], [3, 0.8], [11, 1.5]] as const;
    for (const [g, [name, gbnf]] of Object.entries(grammars).entries()) {
      // every grammar x every setting with LLAMAPEG_FULL=1; else greedy plus one of the two seeded
      // settings per grammar, alternating (both seeded settings still run)
      for (const [seed, temperature] of FULL ? settings : [settings[0], settings[1 + (g % 2)]]) {
        for (const grammarFirst of [false, true]) {
          const options = { seed, temperature, maxTokens: 32, grammarFirst, grammar: { gbnf } };
          const fast = await context.generate(prompt, { ...options, grammarResample: "fast" }).result();
          const reference = await context.generate(prompt, { ...options, grammarResample: "reference" }).result();
          expect(fast.tokens, `${name} seed ${seed} t ${temperature} first ${grammarFirst}`).toEqual(reference.tokens);
          expect(fast.tokens.length).toBeGreaterThan(0);
          compared += fast.tokens.length;
        }
      }
    }
    expect(compared).toBeGreaterThan(FULL ? 200 : 120);
  }, 900_000);

  it("grammar-first output follows the grammar at temperature > 0 (JSON.parse accepts it)", async () => {
    for (const seed of [1, 2, 3]) {
      const r = await context.generate(prompt, { seed, temperature: 1, maxTokens: 300, grammarFirst: true, grammar: { gbnf: smallJson } }).result();
      if (r.stats.stopReason === "eog") expect(typeof JSON.parse(r.text)).toBe("object");
      else expect(r.stats.stopReason).toBe("length");
    }
  }, 300_000);
});
