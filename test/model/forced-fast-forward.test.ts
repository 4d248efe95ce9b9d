// Fast-forward (native/forced-tokens.*, docs/grammar-engine.md "Forced text") in generation on the
// tiny random-weight model: with and without it, the output is text the grammar admits (llama.cpp's
// own grammar takes every token, via llamapeg-grammar-test); greedy outputs are the same token for
// token up to the first forced run where the model's own split of the forced text was not the
// tokenizer's (and where logit bias steers the model to the tokenizer's split, the same
// throughout); forced tokens are marked, counted, streamed, cut by maxTokens, never stop or EOG
// tokens, absent while a lazy grammar waits, logprob 0 when asked for; small batches and two
// sequences at once.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { loadModel, type Context, type GenerateOptions, type GeneratedToken, type Model } from "../../lib/llama/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { GrammarProgram } from "../native-grammar/program.js";

let model: Model;
let modelPath: string;
let context: Context;
let program: GrammarProgram;
let prompt: Int32Array;

const PROPS: Record<string, unknown> = {
  city: { type: "string" },
  country: { type: "string" },
  days: { type: "integer" },
  units: { enum: ["metric", "imperial"] },
  hourly: { type: "boolean" },
  lang: { type: "string" },
};
const TOOL = {
  type: "function",
  function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: PROPS, required: Object.keys(PROPS), additionalProperties: false } },
};

function namedToolPlan() {
  const template = readFileSync(join(import.meta.dirname, "..", "..", "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
  return applyChatTemplate(template, {
    messages: [{ role: "user", content: "Weather?" }],
    tools: [TOOL],
    tool_choice: { type: "function", function: { name: "get_weather" } },
  } as never);
}

// A fully forced prefix, then a choice: the place where the model and the tokenizer may split alike.
const FORCED_PREFIX = '{"name": "get_weather", "arguments": {"city": "';
const SIMPLE = `root ::= ${JSON.stringify(FORCED_PREFIX)} [a-z]{1,12} "\\", \\"days\\": " [0-9]{1,2} "}}"`;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
  model = await loadModel(modelPath);
  context = model.createContext({ contextSize: 1024, threads: 2 });
  prompt = model.tokenize("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
  program = await GrammarProgram.start();
}, 600_000);

afterAll(async () => {
  await program?.close();
  model?.dispose();
});

/** Generation with fast-forward on unless the case says otherwise (it is opt-in; with logprobs the
 * case says so itself). */
async function run(options: GenerateOptions, seqPrompt = prompt, ctx = context) {
  const items: GeneratedToken[] = [];
  const g = ctx.generate(seqPrompt, { ...(options.logprobs === true ? {} : { fastForward: true }), ...options });
  for await (const item of g) items.push(item);
  const r = await g.result();
  return { items, ...r };
}

async function admitted(gbnf: string, tokens: number[], prefill: number[] = []) {
  return program.call<{ taken: number; of: number; canEnd: boolean; invalid?: string }>("grammar.accepts", { path: modelPath, gbnf, tokens, prefill });
}

function pieceText(tokens: number[]): string {
  return new TextDecoder().decode(Buffer.concat(tokens.map((t) => Buffer.from(model.tokenPiece(t, { special: true })))));
}

describe("fast-forward", () => {
  it("a named tool call with a 6-property schema: admitted text, forced tokens marked and counted, streamed alike", async () => {
    const plan = namedToolPlan();
    expect(plan.grammar?.lazy).toBe(false);
    const grammar = { gbnf: plan.grammar!.gbnf, prefill: plan.grammar!.prefill };
    // (the tiny model's vocabulary has no <tool_call> token: the plan's preserved tokens do not apply)
    const base = { temperature: 0, maxTokens: 400, grammar } as const;
    const on = await run(base);
    const off = await run({ ...base, fastForward: false });
    const prefill = grammar.prefill === "" ? [] : Array.from(model.tokenize(grammar.prefill, { addSpecial: false, parseSpecial: true }));
    for (const [name, r] of [["on", on], ["off", off]] as const) {
      const check = await admitted(grammar.gbnf, r.tokens, prefill);
      expect(check.taken, `${name}: ${r.text.slice(0, 300)}`).toBe(r.tokens.length);
      if (r.stats.stopReason === "eog") expect(check.canEnd).toBe(true);
      // the streamed items are the result
      expect(r.items.map((i) => i.token)).toEqual(r.tokens);
    }
    const forced = on.items.filter((i) => i.forced === true).length;
    expect(on.stats.forcedTokens).toBe(forced);
    expect(forced).toBeGreaterThan(5);
    // the call's opening (marker, name) is forced right after the prompt, before any sample
    expect(on.items[0]!.forced).toBe(true);
    expect(on.stats.forcedRuns).toBeGreaterThan(0);
    expect(on.stats.forcedRuns!).toBeLessThanOrEqual(forced);
    expect(off.stats.forcedTokens ?? 0).toBe(0);
    expect(off.items.some((i) => i.forced === true)).toBe(false);
    // (what follows the forced opening is the random model's: often whitespace the grammar allows)
    expect(on.text.startsWith(pieceText(on.tokens.slice(0, 1)))).toBe(true);
    console.log(
      `named tool call: on ${on.tokens.length} tokens (${forced} forced in ${on.stats.forcedRuns} runs, ${on.stats.generateMs.toFixed(1)} ms), ` +
        `off ${off.tokens.length} tokens (${off.stats.generateMs.toFixed(1)} ms): ${JSON.stringify(on.text.slice(0, 160))}`,
    );
  }, 300_000);

  it("greedy: the same tokens as without it up to the first forced run the model split otherwise; the same throughout where it splits as the tokenizer does", async () => {
    let runsCompared = 0;
    let fullEqual = 0;
    const canonical = Array.from(model.tokenize(FORCED_PREFIX, { addSpecial: false, parseSpecial: false }));
    const steer: Record<number, number> = {};
    // the tokenizer's split of both forced runs (the prefix and the separator before "days")
    for (const t of [...canonical, ...model.tokenize('", "days":', { addSpecial: false, parseSpecial: false })]) steer[t] = 40;
    for (const [k, bias] of [[0, undefined], [1, steer]] as const) {
      const options: GenerateOptions = { temperature: 0, maxTokens: 48, grammar: { gbnf: SIMPLE }, ...(bias ? { logitBias: bias } : {}) };
      const off = await run({ ...options, fastForward: false });
      const on = await run(options);
      for (const r of [on, off]) expect((await admitted(SIMPLE, r.tokens)).taken).toBe(r.tokens.length);
      expect(on.stats.forcedTokens).toBeGreaterThan(0);
      let i = 0;
      let diverged = false;
      while (i < on.items.length && !diverged) {
        if (on.items[i]!.forced !== true) {
          expect(on.items[i]!.token, `bias ${k} at ${i}`).toBe(off.tokens[i]);
          i++;
          continue;
        }
        let j = i;
        while (j < on.items.length && on.items[j]!.forced === true) j++;
        const run_ = on.tokens.slice(i, j);
        runsCompared++;
        if (off.tokens.slice(i, j).join() !== run_.join()) {
          // the model's own tokens spelled the forced bytes otherwise (the grammar forced them too)
          expect(pieceText(off.tokens.slice(i)).startsWith(pieceText(run_)), `bias ${k} run at ${i}`).toBe(true);
          diverged = true;
        }
        i = j;
      }
      if (!diverged) {
        expect(on.tokens).toEqual(off.tokens);
        fullEqual++;
      }
      if (bias) {
        // steered to the tokenizer's split, the model takes the forced run's tokens itself
        expect(off.tokens.slice(0, canonical.length - 1)).toEqual(canonical.slice(0, canonical.length - 1));
        expect(diverged).toBe(false);
      }
    }
    expect(runsCompared).toBeGreaterThan(0);
    expect(fullEqual).toBeGreaterThan(0);
  }, 300_000);

  it("maxTokens cuts inside a forced run; forced runs never hold a stop token; logprobs turn it off unless asked, then forced tokens have log probability 0", async () => {
    for (const maxTokens of [3, 5, 9]) {
      const r = await run({ temperature: 0, maxTokens, grammar: { gbnf: SIMPLE } });
      expect(r.tokens.length).toBe(maxTokens);
      expect(r.stats.generatedTokens).toBe(maxTokens);
      expect(r.stats.stopReason).toBe("length");
      expect(pieceText(r.tokens)).toBe(FORCED_PREFIX.slice(0, pieceText(r.tokens).length));
    }
    const canonical = Array.from(model.tokenize(FORCED_PREFIX, { addSpecial: false, parseSpecial: false }));
    const stop = canonical[3]!;
    const s = await run({ temperature: 0, maxTokens: 48, grammar: { gbnf: SIMPLE }, stopTokens: [stop] });
    expect(s.items.some((i) => i.forced === true && i.token === stop)).toBe(false);
    expect(s.tokens.includes(stop)).toBe(false);
    if (s.stats.stopReason === "stop") expect(s.stats.stopToken).toBe(stop);

    const lp = await run({ temperature: 0, maxTokens: 24, grammar: { gbnf: SIMPLE }, logprobs: true });
    expect(lp.stats.forcedTokens ?? 0).toBe(0);
    for (const item of lp.items) expect(item.extra?.ids.length).toBeGreaterThan(0);
    const lpOn = await run({ temperature: 0, maxTokens: 24, grammar: { gbnf: SIMPLE }, logprobs: true, fastForward: true });
    expect(lpOn.stats.forcedTokens).toBeGreaterThan(0);
    for (const item of lpOn.items) {
      expect(item.extra?.ids.length).toBeGreaterThan(0);
      if (item.forced) expect([item.extra!.ids[0], item.extra!.values[0]]).toEqual([item.token, 0]);
    }
  }, 300_000);

  it("a lazy grammar forces nothing before its trigger and forces after it", async () => {
    const hello = model.tokenize("Hello", { addSpecial: false, parseSpecial: false });
    expect(hello.length).toBe(1);
    // the bias makes the model say Hello until the grammar, triggered by the second, forbids it
    const gbnf = `root ::= "HelloHello" ${JSON.stringify(FORCED_PREFIX)} [a-z]{1,12} "\\"}}"`;
    const r = await run({
      temperature: 0,
      maxTokens: 40,
      grammar: { gbnf, lazy: true, triggerWords: ["HelloHello"] },
      logitBias: { [hello[0]!]: 100 },
    });
    expect(r.tokens.slice(0, 2)).toEqual([hello[0], hello[0]]);
    for (const item of r.items.slice(0, 2)) expect(item.forced).toBeUndefined();
    expect(r.items[2]?.forced).toBe(true);
    expect(r.stats.forcedTokens).toBeGreaterThan(0);
    expect((await admitted(gbnf, r.tokens)).taken).toBe(r.tokens.length);
  }, 300_000);

  it("a batch of 4 and two sequences at once: forced runs fit, output admitted", async () => {
    const small = model.createContext({ contextSize: 512, threads: 2, batchSize: 4 });
    try {
      const r = await run({ temperature: 0, maxTokens: 48, grammar: { gbnf: SIMPLE } }, prompt, small);
      expect(r.stats.forcedTokens).toBeGreaterThan(0);
      expect(r.stats.forcedTokens! / r.stats.forcedRuns!).toBeLessThanOrEqual(3);
      expect((await admitted(SIMPLE, r.tokens)).taken).toBe(r.tokens.length);
    } finally {
      small.dispose();
    }
    const two = model.createContext({ contextSize: 1024, threads: 2, sequences: 2 });
    const a = two.getSequence();
    const b = two.getSequence();
    try {
      const [ra, rb] = await Promise.all([
        a.generate(prompt, { temperature: 0.8, seed: 1, maxTokens: 48, grammar: { gbnf: SIMPLE }, fastForward: true }).result(),
        b.generate(prompt, { temperature: 0.8, seed: 2, maxTokens: 48, grammar: { gbnf: SIMPLE }, fastForward: true }).result(),
      ]);
      for (const r of [ra, rb]) {
        expect(r.stats.forcedTokens).toBeGreaterThan(0);
        expect((await admitted(SIMPLE, r.tokens)).taken).toBe(r.tokens.length);
      }
    } finally {
      two.dispose();
    }
  }, 300_000);
});
