// Grammar-constrained generation on the tiny random-weight model: random weights produce
// gibberish, so every output that lands in the grammar's language shows the grammar at work.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { loadModel, setLogger, type Context, type Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf } from "./helpers.js";

let model: Model;
let context: Context;
let prompt: Int32Array;
const smallJson = readFileSync(join(import.meta.dirname, "fixtures", "small-json.gbnf"), "utf8");

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 512, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nAnswer<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterEach(() => {
  // A test that failed or timed out may leave a generation running: start the next one clean.
  if (context.busy) {
    context.dispose();
    context = model.createContext({ contextSize: 512, threads: 2 });
  }
});

afterAll(() => {
  model?.dispose();
});

describe("grammar", () => {
  it('root ::= "yes" | "no" holds over many seeds, and ends with EOG', async () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 8; seed++) {
      const r = await context.generate(prompt, { seed, temperature: 1, maxTokens: 16, grammar: { gbnf: 'root ::= "yes" | "no"' } }).result();
      expect(["yes", "no"]).toContain(r.text);
      expect(r.stats.stopReason).toBe("eog");
      seen.add(r.text);
    }
    expect(seen.size).toBe(2);
  });

  it("a custom root rule", async () => {
    const r = await context
      .generate(prompt, { seed: 1, maxTokens: 16, grammar: { gbnf: 'answer ::= "ok"\nother ::= "x"', root: "answer" } })
      .result();
    expect(r.text).toBe("ok");
  });

  it("a JSON grammar: JSON.parse accepts every output", async () => {
    for (let seed = 0; seed < 5; seed++) {
      const r = await context
        .generate(prompt, { seed, temperature: 1, maxTokens: 200, grammar: { gbnf: smallJson } })
        .result();
      expect(r.stats.stopReason, `seed ${seed}: ${r.text}`).toBe("eog");
      expect(() => JSON.parse(r.text), r.text).not.toThrow();
      expect(typeof JSON.parse(r.text)).toBe("object");
    }
  });

  it("the fast resample after a rejection picks exactly what llama.cpp's full pass picks", async () => {
    // The reference pass checks all 151k tokens per rejection: slow, hence few short runs.
    for (const [seed, temperature] of [[1, 1], [4, 0]] as const) {
      const options = { seed, temperature, maxTokens: 24, grammar: { gbnf: smallJson } };
      const fast = await context.generate(prompt, { ...options, grammarResample: "fast" }).result();
      const reference = await context.generate(prompt, { ...options, grammarResample: "reference" }).result();
      expect(fast.tokens, `seed ${seed}`).toEqual(reference.tokens);
    }
  }, 240_000);

  it("greedy sampling under a grammar works too", async () => {
    const r = await context.generate(prompt, { temperature: 0, maxTokens: 200, grammar: { gbnf: smallJson } }).result();
    expect(() => JSON.parse(r.text)).not.toThrow();
  });

  it("a lazy grammar whose trigger fires: output is free before it and follows the grammar after", async () => {
    const free = await context.generate(prompt, { temperature: 0, maxTokens: 12 }).result();
    // The first token (from the third on) that has not appeared before: the trigger fires there.
    const k = free.tokens.findIndex((t, i) => i >= 2 && free.tokens.indexOf(t) === i);
    expect(k).toBeGreaterThan(0);
    const trigger = free.tokens[k]!;
    const gbnf = `root ::= <[${trigger}]> ("yes" | "no")`;
    const r = await context
      .generate(prompt, { temperature: 0, maxTokens: 40, grammar: { gbnf, lazy: true, triggerTokens: [trigger] } })
      .result();
    expect(r.tokens.slice(0, k + 1)).toEqual(free.tokens.slice(0, k + 1));
    const after = model.detokenize(r.tokens.slice(k + 1));
    expect(["yes", "no"]).toContain(after);
    expect(r.stats.stopReason).toBe("eog");
  });

  it("a lazy grammar triggered by a text pattern feeds the grammar from the match", async () => {
    const free = await context.generate(prompt, { temperature: 0, maxTokens: 12 }).result();
    const k = free.tokens.findIndex((t, i) => i >= 2 && free.tokens.indexOf(t) === i);
    const piece = model.detokenize([free.tokens[k]!]);
    const before = model.detokenize(free.tokens.slice(0, k));
    // Only patterns that do not match earlier output make this test meaningful.
    expect(before.includes(piece)).toBe(false);
    const literal = JSON.stringify(piece); // GBNF string escapes are a superset of what JSON emits here
    const gbnf = `root ::= ${literal} ("yes" | "no")`;
    const r = await context
      .generate(prompt, { temperature: 0, maxTokens: 40, grammar: { gbnf, lazy: true, triggerWords: [piece] } })
      .result();
    expect(r.text.startsWith(before + piece)).toBe(true);
    expect(["yes", "no"]).toContain(r.text.slice((before + piece).length));
  });

  it("a lazy grammar whose trigger never fires leaves the output free", async () => {
    const free = await context.generate(prompt, { temperature: 0, maxTokens: 30 }).result();
    const lazy = await context
      .generate(prompt, {
        temperature: 0,
        maxTokens: 30,
        grammar: { gbnf: 'root ::= "<tool_call>" "x"', lazy: true, triggerWords: ["<tool_call>"] },
      })
      .result();
    expect(lazy.tokens).toEqual(free.tokens);
  });

  it("an invalid GBNF is ERR_GRAMMAR_INVALID carrying llama.cpp's own message; the context stays usable", async () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['root ::= "abc', undefined, "unexpected end of input"],
      ["root ::= foo", undefined, "Undefined rule identifier 'foo'"],
      ['start ::= "a"', undefined, "grammar does not contain a 'root' symbol"],
      ['root ::= "a"', "nope", "grammar does not contain a 'nope' symbol"],
      ["root ::= root \"a\" | \"b\"", undefined, "left recursion"],
      ["root = \"a\"", undefined, "expecting ::="],
    ];
    for (const [gbnf, root, message] of cases) {
      const grammar = root === undefined ? { gbnf } : { gbnf, root };
      const error = await codeOf(() => context.generate(prompt, { grammar }));
      expect(error.code).toBe("ERR_GRAMMAR_INVALID");
      expect(error.message).toContain(message);
    }
    const badPattern = await codeOf(() =>
      context.generate(prompt, { grammar: { gbnf: 'root ::= "a"', lazy: true, triggerPatterns: ["(unclosed"] } }),
    );
    expect(badPattern.code).toBe("ERR_GRAMMAR_INVALID");
    expect(context.busy).toBe(false);
    expect((await context.generate(prompt, { maxTokens: 2 }).result()).tokens.length).toBeGreaterThan(0);
  });

  it("a grammar that reaches a dead end stops with ERR_GRAMMAR_DEAD_END, not a hang or abort()", async () => {
    // A token id outside the vocabulary: no candidate can ever match.
    const generation = context.generate(prompt, { maxTokens: 5, grammar: { gbnf: `root ::= <[${model.vocabSize + 5}]>` } });
    const error = await codeOf(() => generation.result());
    expect(error.code).toBe("ERR_GRAMMAR_DEAD_END");
    const iterated = context.generate(prompt, { maxTokens: 5, grammar: { gbnf: `root ::= "a" <[${model.vocabSize + 5}]>` } });
    const error2 = await codeOf(async () => {
      for await (const _ of iterated) {
        // the "a" arrives first, then the dead end
      }
    });
    expect(error2.code).toBe("ERR_GRAMMAR_DEAD_END");
    expect(context.busy).toBe(false);
  });

  it("preserved tokens are rendered as text in pieces", async () => {
    const imStart = model.tokenize("<|im_start|>", { parseSpecial: true });
    expect(imStart.length).toBe(1);
    const r = await context
      .generate(prompt, { maxTokens: 3, grammar: { gbnf: 'root ::= "a" <|im_start|> "b"' }, preservedTokens: ["<|im_start|>"] })
      .result();
    expect(r.text).toBe("a<|im_start|>b");
  });

  it("setLogger receives llama.cpp's log lines; null silences it", async () => {
    const lines: string[] = [];
    setLogger((level, line) => lines.push(`${level}: ${line}`), { level: "debug" });
    try {
      const m = await loadModel(model.path);
      m.dispose();
      await new Promise((r) => setTimeout(r, 50));
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join("")).toContain("qwen2");
    } finally {
      setLogger(null);
    }
  });
});
