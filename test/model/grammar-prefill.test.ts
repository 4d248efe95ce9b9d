// grammar.prefill: the grammar consumes text the prompt already ends with (llama.cpp's prefill of
// the generation prompt), so a plan's grammar can start at the whole output, as the reference's does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf } from "./helpers.js";

let model: Model;
let context: Context;
let prompt: Int32Array;
const GEN = "<|im_start|>assistant\n";

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 2 });
  prompt = model.tokenize(`<|im_start|>user\nAnswer<|im_end|>\n${GEN}`, { parseSpecial: true });
});

afterAll(() => model?.dispose());

describe("grammar.prefill", () => {
  it("a grammar that starts with the generation prompt constrains what follows it", async () => {
    const gbnf = `root ::= "<|im_start|>assistant\\n" ( "yes" | "no" )`;
    for (let seed = 0; seed < 4; seed++) {
      const r = await context.generate(prompt, { seed, temperature: 1, maxTokens: 8, grammar: { gbnf, prefill: GEN } }).result();
      expect(["yes", "no"]).toContain(r.text);
    }
  });

  it("a prefill the grammar rejects is ERR_GRAMMAR_INVALID before anything is generated", async () => {
    const e = await codeOf(() => context.generate(prompt, { maxTokens: 4, grammar: { gbnf: 'root ::= "yes"', prefill: GEN } }));
    expect(e.code).toBe("ERR_GRAMMAR_INVALID");
    expect(e.message).toMatch(/prefill/);
    expect(context.busy).toBe(false);
  });

  it("prefill is for eager grammars only", () => {
    expect(() => context.generate(prompt, { grammar: { gbnf: 'root ::= "a"', lazy: true, triggerWords: ["a"], prefill: GEN } })).toThrow(TypeError);
  });
});
