// The decoding fields of a chat completion (lib/openai/decoding.ts) on the tiny random-weight
// model: fast-forward on by default wherever the plan has a grammar (off in reference mode and
// with fast_forward false), prompt-lookup speculation on request, both reported in
// `llamapeg.decoding`; the text stays what the grammar admits, and with a reasoning budget the
// forced close and the grammar's forced text take turns.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { createChatCompletion, validateJson, type ChatCompletion, type ChatCompletionRequest } from "../../lib/openai/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { scaledTestModel } from "../../lib/test-model/scaled.js";

let model: Model;
let context: Context;
let copy: Model; // attn_output zeroed: writes again what it wrote before (test-model/scaled.ts)
let copyContext: Context;

beforeAll(async () => {
  const path = await ensureTestModel("tiny");
  model = await loadModel(path);
  context = model.createContext({ contextSize: 2048, threads: 1 });
  copy = await loadModel(scaledTestModel(path, /attn_output\.weight$/, 0));
  copyContext = copy.createContext({ contextSize: 2048, threads: 1 });
});

afterAll(() => {
  model?.dispose();
  copy?.dispose();
});

type Whole = ChatCompletionRequest & { stream?: false };
const PARAMS = {
  type: "object",
  properties: { city: { type: "string", maxLength: 6 }, units: { enum: ["metric", "imperial"] }, days: { type: "integer", minimum: 1, maximum: 7 } },
  required: ["city", "units", "days"],
  additionalProperties: false,
};
const TOOLS = [{ type: "function" as const, function: { name: "get_weather_forecast", parameters: PARAMS } }];
const named: Whole = {
  messages: [{ role: "user", content: "Weather in Paris?" }],
  tools: TOOLS,
  tool_choice: { type: "function", function: { name: "get_weather_forecast" } },
  temperature: 0,
  // (the random model pads its JSON with whitespace the grammar allows: room to finish the call)
  max_tokens: 400,
};

function callOf(c: ChatCompletion): { name: string; args: unknown } {
  const call = c.choices[0].message.tool_calls![0]!;
  return { name: call.function.name, args: JSON.parse(call.function.arguments) as unknown };
}

describe("fast_forward", () => {
  it("on by default with a grammar: forced tokens reported, the call valid; fast_forward false and reference_mode sample every token", async () => {
    const on = await createChatCompletion(context, named);
    const off = await createChatCompletion(context, { ...named, fast_forward: false });
    const reference = await createChatCompletion(context, { ...named, reference_mode: true });
    for (const c of [on, off, reference]) {
      expect(c.choices[0].finish_reason).toBe("tool_calls");
      expect(c.llamapeg.parse_errors).toEqual([]);
      const { name, args } = callOf(c);
      expect(name).toBe("get_weather_forecast");
      expect(validateJson(args, PARAMS)).toEqual([]);
    }
    // the name, the property names and the separators are forced: many of the tokens
    expect(on.llamapeg.decoding!.forced_tokens).toBeGreaterThan(10);
    expect(on.llamapeg.decoding!.forced_tokens).toBeLessThan(on.usage.completion_tokens);
    expect(off.llamapeg.decoding!.forced_tokens).toBe(0);
    expect(reference.llamapeg.decoding!.forced_tokens).toBe(0);
    // (reference mode asks for fast-forward explicitly: the request wins over the default)
    const asked = await createChatCompletion(context, { ...named, reference_mode: true, fast_forward: true });
    expect(asked.llamapeg.decoding!.forced_tokens).toBeGreaterThan(10);
  });

  it("without a grammar nothing is forced, whatever the field says", async () => {
    const c = await createChatCompletion(context, { messages: [{ role: "user", content: "hi" }], max_tokens: 8, seed: 1, fast_forward: true });
    expect(c.llamapeg.decoding).toEqual({ forced_tokens: 0, draft_tokens: 0, draft_accepted_tokens: 0 });
  });

  it("with a reasoning budget (QwQ, tool_choice required): the block closes within the budget, the call's forced text follows", async () => {
    const template = readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "Qwen-QwQ-32B.jinja"), "utf8");
    const tools = [{ type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } }];
    for (const seed of [3, 5]) {
      const c = await createChatCompletion(context, { messages: [{ role: "user", content: "Pick one." }], chat_template: template, tools, tool_choice: "required", seed, temperature: 1, max_tokens: 80, reasoning_budget_tokens: 4 });
      const reasoning = c.usage.completion_tokens_details!.reasoning_tokens;
      expect(reasoning).toBeGreaterThanOrEqual(4);
      expect(reasoning).toBeLessThanOrEqual(4 + 3);
      const call = c.choices[0].message.tool_calls![0]!;
      expect(call.function.name).toBe("pick");
      expect(validateJson(JSON.parse(call.function.arguments), tools[0]!.function.parameters)).toEqual([]);
      expect(c.llamapeg.decoding!.forced_tokens).toBeGreaterThan(0);
    }
  });
});

describe("speculative", () => {
  it("prompt lookup: the same greedy completion with and without drafts, the drafts reported", async () => {
    // The copying model shown its own answer writes it again: drafts from the prompt are kept.
    const first = await createChatCompletion(copyContext, { messages: [{ role: "user", content: "Write." }], temperature: 0, max_tokens: 40 });
    const again: Whole = { messages: [{ role: "user", content: `Write this again: ${first.choices[0].message.content}` }], temperature: 0, max_tokens: 40 };
    const plain = await createChatCompletion(copyContext, again);
    const spec = await createChatCompletion(copyContext, { ...again, speculative: { type: "ngram" } });
    expect(spec.choices[0].message).toEqual(plain.choices[0].message);
    expect(spec.usage.completion_tokens).toBe(plain.usage.completion_tokens);
    expect(plain.llamapeg.decoding!.draft_tokens).toBe(0);
    expect(spec.llamapeg.decoding!.draft_accepted_tokens).toBeGreaterThan(10);
    expect(spec.llamapeg.decoding!.draft_accepted_tokens).toBeLessThanOrEqual(spec.llamapeg.decoding!.draft_tokens);
    // under the tool-call grammar as well
    const call = await createChatCompletion(context, { ...named, speculative: { type: "ngram", ngram_min: 1 } });
    const base = await createChatCompletion(context, named);
    expect(call.choices[0].message.tool_calls![0]!.function.arguments).toBe(base.choices[0].message.tool_calls![0]!.function.arguments);
  });
});

describe("bad values", () => {
  it("are 400s naming the field, before anything is generated", async () => {
    const cases: Array<[Partial<Whole>, string]> = [
      [{ fast_forward: "yes" as never }, "fast_forward"],
      [{ speculative: true as never }, "speculative"],
      [{ speculative: { type: "beam" } as never }, "speculative.type"],
      // (a valid type, but this context has no draft model)
      [{ speculative: { type: "draft" } }, "speculative"],
      [{ speculative: { type: "draft", p_min: 2 } }, "speculative.p_min"],
      [{ speculative: { draft_max: 4 } as never }, "speculative.type"],
      [{ speculative: { type: "ngram", draft_max: 0 } }, "speculative.draft_max"],
      [{ speculative: { type: "ngram", draft_max: 1.5 } }, "speculative.draft_max"],
      [{ speculative: { type: "ngram", draft_min: 9, draft_max: 4 } }, "speculative"],
      [{ speculative: { type: "ngram", ngram_min: 5, ngram_max: 3 } }, "speculative"],
      [{ speculative: { type: "ngram", depth: 2 } as never }, "speculative.depth"],
      [{ speculative: { type: "ngram", text_lookup: "yes" } as never }, "speculative.text_lookup"],
    ];
    for (const [over, where] of cases) {
      let error: { code?: string; where?: string; message?: string } | undefined;
      try {
        await createChatCompletion(context, { ...named, ...over });
      } catch (e) {
        error = e as typeof error;
      }
      expect(error?.code, JSON.stringify(over)).toBe("ERR_INVALID_REQUEST");
      expect(error?.where, JSON.stringify(over)).toBe(where);
    }
    expect(context.busy).toBe(false);
  });
});
