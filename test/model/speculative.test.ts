// Prompt-lookup speculative decoding (native/speculative.*, docs/speculative.md) on the tiny
// random-weight model: greedy output is the same token for token with and without a draft, with
// and without a grammar, cut by maxTokens inside a draft, streamed alike (tokens and OpenAI
// deltas, stop strings included), on one sequence and two at once. Random weights never copy their
// prompt, so drafts are mostly rejected there (the rollback path); the "copy" variant of the model
// (every attn_output zeroed: the next token depends on the current one only, so text it wrote once
// it writes again) gets its drafts accepted (the keep path). Under a grammar a draft never brings
// in a token the grammar rejects.
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type GenerateOptions, type GeneratedToken, type Model } from "../../lib/llama/index.js";
import { createChatCompletion, type ChatCompletionChunk } from "../../lib/openai/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { scaledTestModel } from "../../lib/test-model/scaled.js";
import { loadTestModel } from "../support/models.js";

let model: Model; // the tiny model
let copy: Model; // its copying variant
let near: Model; // attn_output scaled by 0.05: copies for a few tokens, then the context wins
let context: Context;
let copyContext: Context;
let nearContext: Context;

// One thread: on a busy machine two spinning threads per decode are many times slower.
beforeAll(async () => {
  const path = await ensureTestModel("tiny");
  model = await loadModel(path);
  copy = await loadModel(scaledTestModel(path, /attn_output\.weight$/, 0));
  near = await loadModel(scaledTestModel(path, /attn_output\.weight$/, 0.05));
  context = model.createContext({ contextSize: 2048, threads: 1 });
  copyContext = copy.createContext({ contextSize: 2048, threads: 1 });
  nearContext = near.createContext({ contextSize: 2048, threads: 1 });
}, 600_000);

afterAll(() => {
  model?.dispose();
  copy?.dispose();
  near?.dispose();
});

const chat = (m: Model, user: string) => Array.from(m.tokenize(`<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`, { parseSpecial: true }));

// Every step drafts something (a 1-token match anywhere in the history), so most drafts are
// rejected and their cells dropped: any cell left behind would change the later logits.
const EAGER = { type: "ngram", ngramMin: 1, ngramMax: 3, draftMax: 4 } as const;

async function run(ctx: Context | { generate: Context["generate"] }, prompt: number[], options: GenerateOptions) {
  const items: GeneratedToken[] = [];
  const g = ctx.generate(prompt, options);
  for await (const item of g) items.push(item);
  const r = await g.result();
  return { items, ...r };
}

/** A prompt that holds, after a first turn, the model's own greedy answer `n` tokens long. */
async function repeatingPrompt(n: number, ctx = copyContext) {
  const first = chat(copy, "Write the file.");
  const answer = (await ctx.generate(first, { temperature: 0, maxTokens: n }).result()).tokens;
  const again = Array.from(copy.tokenize("<|im_end|>\n<|im_start|>user\nAgain, unchanged.<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true }));
  return { prompt: [...first, ...answer, ...again], answer };
}

describe("speculative decoding (ngram)", () => {
  it("greedy, no grammar: the same tokens and pieces with and without drafts, accepted and rejected", async () => {
    let drafted = 0;
    let accepted = 0;
    const cases: Array<[Context, number[]]> = [
      [context, chat(model, "Repeat: one two three one two three one two three.")],
      [context, chat(model, "List the files.")],
      // copies its earlier answer for a few tokens at a time: drafts kept in part, then cells dropped
      [nearContext, (await repeatingPrompt(160, nearContext)).prompt],
    ];
    for (const [ctx, prompt] of cases) {
      const off = await run(ctx, prompt, { temperature: 0, maxTokens: 96 });
      for (const spec of [EAGER, { type: "ngram" } as const]) {
        const on = await run(ctx, prompt, { temperature: 0, maxTokens: 96, speculative: spec });
        expect(on.tokens).toEqual(off.tokens);
        expect(on.text).toBe(off.text);
        expect(on.items.map((i) => Buffer.from(i.piece).toString("hex"))).toEqual(off.items.map((i) => Buffer.from(i.piece).toString("hex")));
        expect(on.stats.generatedTokens).toBe(off.stats.generatedTokens);
        expect(on.stats.stopReason).toBe(off.stats.stopReason);
        expect(on.stats.draftAcceptedTokens!).toBeLessThanOrEqual(on.stats.draftTokens!);
        drafted += on.stats.draftTokens!;
        accepted += on.stats.draftAcceptedTokens!;
      }
      expect(off.stats.draftTokens).toBe(0);
    }
    console.log(`tiny + near-copy models: ${drafted} drafted, ${accepted} accepted`);
    expect(accepted).toBeGreaterThan(0);
    expect(drafted - accepted).toBeGreaterThan(10);
  }, 300_000);

  it("copy model: drafts from the prompt are accepted, the output is the same; maxTokens cuts inside a draft", async () => {
    const { prompt, answer } = await repeatingPrompt(80);
    const off = await run(copyContext, prompt, { temperature: 0, maxTokens: 80 });
    // (the premise: this model answers again what it answered before)
    expect(off.tokens).toEqual(answer);
    const on = await run(copyContext, prompt, { temperature: 0, maxTokens: 80, speculative: { type: "ngram", draftMax: 8 } });
    expect(on.tokens).toEqual(off.tokens);
    expect(on.items.map((i) => Buffer.from(i.piece).toString("hex"))).toEqual(off.items.map((i) => Buffer.from(i.piece).toString("hex")));
    expect(on.stats.draftTokens).toBeGreaterThan(40);
    expect(on.stats.draftAcceptedTokens! / on.stats.draftTokens!).toBeGreaterThan(0.8);
    // far fewer decode steps: each step emits the sampled token plus what it accepted
    for (const maxTokens of [1, 2, 7, 13, 30]) {
      const cut = await run(copyContext, prompt, { temperature: 0, maxTokens, speculative: { type: "ngram", draftMax: 8 } });
      expect(cut.tokens).toEqual(off.tokens.slice(0, maxTokens));
      expect(cut.stats.generatedTokens).toBe(maxTokens);
      expect(cut.stats.stopReason).toBe("length");
    }
    // a draft longer than the batch is cut to it
    const small = copy.createContext({ contextSize: 512, threads: 1, batchSize: 4 });
    try {
      const b = await run(small, prompt.slice(-200), { temperature: 0, maxTokens: 40 });
      const bs = await run(small, prompt.slice(-200), { temperature: 0, maxTokens: 40, speculative: { type: "ngram", draftMax: 16 } });
      expect(bs.tokens).toEqual(b.tokens);
      expect(bs.stats.draftTokens).toBeGreaterThan(0);
    } finally {
      small.dispose();
    }
  }, 300_000);

  it("text lookup: drafts where token n-grams miss (the prompt's text tokenized otherwise, a file copied JSON-escaped); the same tokens", async () => {
    // The copy model's answer, put back into the prompt as text: the prompt holds it in the
    // tokenizer's own split, the model writes it in its own.
    const answer = await run(copyContext, chat(copy, "Write the file."), { temperature: 0, maxTokens: 80 });
    const prompt = chat(copy, `Here it is:\n${answer.text}\nAgain.`);
    const off = await run(copyContext, prompt, { temperature: 0, maxTokens: 80 });
    const tokensOnly = await run(copyContext, prompt, { temperature: 0, maxTokens: 80, speculative: { type: "ngram", draftMax: 8, textLookup: false } });
    const text = await run(copyContext, prompt, { temperature: 0, maxTokens: 80, speculative: { type: "ngram", draftMax: 8 } });
    expect(tokensOnly.tokens).toEqual(off.tokens);
    expect(text.tokens).toEqual(off.tokens);
    expect(text.stats.draftAcceptedTokens!).toBeGreaterThan(tokensOnly.stats.draftAcceptedTokens!);
    // A file shown raw, written as a JSON string (the grammar admits exactly that string): its
    // newlines are `\n` and its quotes `\"` there, so token n-grams of the prompt rarely occur in
    // the output; its escaped text does.
    const file = 'function add(a, b) {\n  return a + b; // "sum"\n}\n\nconst x = "hello\\tworld";\nconsole.log(add(1, 2));\n';
    const grammar = { gbnf: `root ::= ${JSON.stringify(JSON.stringify(file))}` };
    for (const [m, ctx] of [[copy, copyContext], [model, context]] as const) {
      const p = chat(m, `Here is add.js:\n${file}\nWrite it as a JSON string.`);
      const goff = await run(ctx, p, { temperature: 0, maxTokens: 200, grammar });
      expect(JSON.parse(goff.text)).toBe(file);
      const gTokens = await run(ctx, p, { temperature: 0, maxTokens: 200, grammar, speculative: { type: "ngram", draftMax: 8, textLookup: false } });
      const gText = await run(ctx, p, { temperature: 0, maxTokens: 200, grammar, speculative: { type: "ngram", draftMax: 8 } });
      expect(gTokens.tokens).toEqual(goff.tokens);
      expect(gText.tokens).toEqual(goff.tokens);
      // (measured: 7 and 4 kept by token lookup, 31 and 29 with text lookup, of 68 and 74 tokens)
      expect(gText.stats.draftAcceptedTokens!).toBeGreaterThan(2 * gTokens.stats.draftAcceptedTokens!);
    }
  }, 300_000);

  it("seeded sampling: the same tokens with and without drafts (one draw per emitted token either way)", async () => {
    const { prompt } = await repeatingPrompt(48);
    for (const seed of [1, 2]) {
      const base = { temperature: 0.7, seed, maxTokens: 48 } as const;
      const off = await run(copyContext, prompt, base);
      const on = await run(copyContext, prompt, { ...base, speculative: { type: "ngram" } });
      expect(on.tokens).toEqual(off.tokens);
      const offTiny = await run(context, chat(model, "Hi."), base);
      const onTiny = await run(context, chat(model, "Hi."), { ...base, speculative: EAGER });
      expect(onTiny.tokens).toEqual(offTiny.tokens);
    }
  }, 300_000);

  it("under a grammar: the same tokens; a draft the grammar rejects is never taken", async () => {
    // The tiny model under a JSON-ish grammar, eager drafts (mostly rejected).
    const gbnf = 'root ::= "{\\"path\\": \\"" [a-z/.]{1,20} "\\", \\"content\\": \\"" [^"\\\\]{0,60} "\\"}"';
    const prompt = chat(model, 'Edit {"path": "a/b.txt", "content": "x"}');
    const off = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf } });
    const on = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, speculative: EAGER });
    expect(on.tokens).toEqual(off.tokens);
    expect(on.stats.draftTokens).toBeGreaterThan(0);
    // The copy model would write its answer again, but the grammar admits digits only: drafts of
    // that answer are cut at once (nothing decoded), and the output is digits.
    const { prompt: rp } = await repeatingPrompt(40);
    const digits = { gbnf: "root ::= [0-9 ]{1,40}" };
    const doff = await run(copyContext, rp, { temperature: 0, maxTokens: 40, grammar: digits });
    const don = await run(copyContext, rp, { temperature: 0, maxTokens: 40, grammar: digits, speculative: { type: "ngram", ngramMin: 1 } });
    expect(don.tokens).toEqual(doff.tokens);
    expect(don.text).toMatch(/^[0-9 ]+$/);
    // ...while the same grammar over free text keeps the copy model's drafts
    const free = { gbnf: "root ::= [^\\x00]{1,400}" };
    const foff = await run(copyContext, rp, { temperature: 0, maxTokens: 40, grammar: free });
    const fon = await run(copyContext, rp, { temperature: 0, maxTokens: 40, grammar: free, speculative: { type: "ngram" } });
    expect(fon.tokens).toEqual(foff.tokens);
    expect(fon.stats.draftAcceptedTokens).toBeGreaterThan(20);
    // with fast-forward on as well: forced text and drafts take turns
    const ff = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, fastForward: true });
    const ffs = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, fastForward: true, speculative: EAGER });
    expect(ffs.tokens).toEqual(ff.tokens);
    expect(ffs.stats.forcedTokens).toBe(ff.stats.forcedTokens);
  }, 300_000);

  it("OpenAI stream with stop strings: the same deltas' text and finish reason", async () => {
    const { answer } = await repeatingPrompt(60);
    const answerText = new TextDecoder().decode(Buffer.concat(answer.map((t) => Buffer.from(copy.tokenPiece(t)))));
    // a stop string in the middle of the answer, as characters (the cut falls inside a draft)
    const chars = [...answerText];
    const stop = chars.slice(Math.floor(chars.length / 2), Math.floor(chars.length / 2) + 3).join("");
    const messages = [
      { role: "user" as const, content: "Write the file." },
      { role: "assistant" as const, content: answerText },
      { role: "user" as const, content: "Again, unchanged." },
    ];
    const results: Array<{ text: string; finish: string | null; drafted: number; accepted: number }> = [];
    for (const speculative of [undefined, { type: "ngram" } as const]) {
      const generations: Array<ReturnType<Context["generate"]>> = [];
      const target = {
        model: copy,
        generate: (ids: ArrayLike<number>, o?: GenerateOptions) => {
          const g = copyContext.generate(ids, { ...o, temperature: 0, ...(speculative ? { speculative } : {}) });
          generations.push(g);
          return g;
        },
      };
      const stream = (await createChatCompletion(target, { messages, max_tokens: 60, stop: [stop], stream: true })) as AsyncIterable<ChatCompletionChunk>;
      let text = "";
      let finish: string | null = null;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (choice === undefined) continue;
        text += choice.delta.content ?? "";
        finish = choice.finish_reason ?? finish;
      }
      const stats = (await generations[0]!.result()).stats;
      results.push({ text, finish, drafted: stats.draftTokens ?? 0, accepted: stats.draftAcceptedTokens ?? 0 });
    }
    expect(results[1]!.text).toBe(results[0]!.text);
    expect(results[1]!.finish).toBe(results[0]!.finish);
    expect(results[0]!.drafted).toBe(0);
    expect(results[1]!.accepted).toBeGreaterThan(0);
    // the stop string ended it, halfway through the copied answer
    expect(results[0]!.finish).toBe("stop");
    expect(results[0]!.text.length).toBeLessThan(answerText.length);
  }, 300_000);

  it("two sequences at once, each with drafts: each its own greedy output", async () => {
    const { prompt } = await repeatingPrompt(40);
    const p2 = chat(copy, "Something else.");
    const solo = [
      (await copyContext.generate(prompt, { temperature: 0, maxTokens: 40 }).result()).tokens,
      (await copyContext.generate(p2, { temperature: 0, maxTokens: 40 }).result()).tokens,
    ];
    const two = copy.createContext({ contextSize: 2048, threads: 1, sequences: 2, batchSize: 8 });
    try {
      const a = two.getSequence();
      const b = two.getSequence();
      const spec = { temperature: 0, maxTokens: 40, speculative: { type: "ngram", draftMax: 6 } } as const;
      const [ra, rb] = await Promise.all([a.generate(prompt, spec).result(), b.generate(p2, spec).result()]);
      expect(ra.tokens).toEqual(solo[0]);
      expect(rb.tokens).toEqual(solo[1]);
      expect(ra.stats.draftAcceptedTokens).toBeGreaterThan(0);
    } finally {
      two.dispose();
    }
  }, 300_000);

  it("bad options are coded errors", () => {
    const prompt = chat(model, "x");
    const bad: unknown[] = [{ type: "draft" }, { draftMax: 4 }, { type: "ngram", draftMax: 0 }, { type: "ngram", draftMin: 5, draftMax: 4 }, { type: "ngram", ngramMin: 5, ngramMax: 3 }, { type: "ngram", extra: 1 }, "ngram", true];
    for (const speculative of bad) {
      expect(() => context.generate(prompt, { speculative } as never), JSON.stringify(speculative)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    }
  });
});

describe("speculative decoding (draft model)", () => {
  // The same weights as a second model: its greedy drafts are the target's own choices (kept);
  // the near-copy variant (attn_output scaled) agrees for some tokens (kept in part).
  let twin: Model;
  let twinContext: Context;
  let nearDrafted: Context;
  beforeAll(async () => {
    const path = await ensureTestModel("tiny");
    twin = await loadModel(path);
    twinContext = model.createContext({ contextSize: 2048, threads: 1, draftModel: twin });
    nearDrafted = model.createContext({ contextSize: 2048, threads: 1, draftModel: near });
  }, 600_000);
  afterAll(() => twin?.dispose());

  const DRAFT = { type: "draft", draftMax: 6 } as const;

  it("greedy: the same tokens and pieces with and without drafts, kept where the draft model agrees", async () => {
    const prompt = chat(model, "List the files.");
    const off = await run(context, prompt, { temperature: 0, maxTokens: 64 });
    const same = await run(twinContext, prompt, { temperature: 0, maxTokens: 64, speculative: DRAFT });
    expect(same.tokens).toEqual(off.tokens);
    expect(same.items.map((i) => Buffer.from(i.piece).toString("hex"))).toEqual(off.items.map((i) => Buffer.from(i.piece).toString("hex")));
    expect(same.stats.draftTokens).toBeGreaterThan(20);
    expect(same.stats.draftAcceptedTokens! / same.stats.draftTokens!).toBeGreaterThan(0.8);
    expect(twinContext.draftModel).toBe(twin);
    // another model drafting: the output is still the target's, most of its drafts thrown away
    const other = await run(nearDrafted, prompt, { temperature: 0, maxTokens: 64, speculative: DRAFT });
    expect(other.tokens).toEqual(off.tokens);
    expect(other.stats.draftTokens).toBeGreaterThan(0);
    // maxTokens inside a draft; a second turn on the same cells (the draft context follows)
    for (const maxTokens of [1, 5, 13]) {
      const cut = await run(twinContext, prompt, { temperature: 0, maxTokens, speculative: DRAFT });
      expect(cut.tokens).toEqual(off.tokens.slice(0, maxTokens));
    }
    const next = [...prompt, ...off.tokens.slice(0, 20), ...chat(model, "And again.")];
    const nextOff = await run(context, next, { temperature: 0, maxTokens: 32 });
    const nextOn = await run(twinContext, next, { temperature: 0, maxTokens: 32, speculative: DRAFT });
    expect(nextOn.tokens).toEqual(nextOff.tokens);
  }, 300_000);

  it("seeded sampling and a grammar: the same tokens; a draft the grammar rejects is never taken", async () => {
    const prompt = chat(model, 'Edit {"path": "a/b.txt"}');
    for (const seed of [1, 2]) {
      const base = { temperature: 0.7, seed, maxTokens: 40 } as const;
      expect((await run(twinContext, prompt, { ...base, speculative: DRAFT })).tokens).toEqual((await run(context, prompt, base)).tokens);
    }
    const gbnf = 'root ::= "{\\"path\\": \\"" [a-z/.]{1,20} "\\", \\"content\\": \\"" [^"\\\\]{0,60} "\\"}"';
    const off = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf } });
    const on = await run(twinContext, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, speculative: DRAFT });
    expect(on.tokens).toEqual(off.tokens);
    expect(on.stats.draftAcceptedTokens).toBeGreaterThan(0);
    const ff = await run(context, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, fastForward: true });
    const ffd = await run(twinContext, prompt, { temperature: 0, maxTokens: 90, grammar: { gbnf }, fastForward: true, speculative: DRAFT });
    expect(ffd.tokens).toEqual(ff.tokens);
  }, 300_000);

  it("two sequences at once, each drafting: each its own greedy output", async () => {
    const p1 = chat(model, "First.");
    const p2 = chat(model, "Second, longer question here.");
    const solo = [(await run(context, p1, { temperature: 0, maxTokens: 30 })).tokens, (await run(context, p2, { temperature: 0, maxTokens: 30 })).tokens];
    const two = model.createContext({ contextSize: 1024, threads: 1, sequences: 2, batchSize: 16, draftModel: twin });
    try {
      const spec = { temperature: 0, maxTokens: 30, speculative: DRAFT } as const;
      const [a, b] = await Promise.all([two.getSequence().generate(p1, spec).result(), two.getSequence().generate(p2, spec).result()]);
      expect(a.tokens).toEqual(solo[0]);
      expect(b.tokens).toEqual(solo[1]);
      expect(a.stats.draftAcceptedTokens).toBeGreaterThan(0);
    } finally {
      two.dispose();
    }
  }, 300_000);

  it("a chat completion asks for it by name; without a draft model it is a 400 naming speculative", async () => {
    const request = { messages: [{ role: "user" as const, content: "List the files." }], temperature: 0, max_tokens: 24 };
    const plain = await createChatCompletion(context, request);
    const drafted = await createChatCompletion(twinContext, { ...request, speculative: { type: "draft", draft_max: 4 } });
    expect(drafted.choices[0].message).toEqual(plain.choices[0].message);
    expect(drafted.llamapeg.decoding!.draft_accepted_tokens).toBeGreaterThan(0);
    await expect(createChatCompletion(context, { ...request, speculative: { type: "draft" } })).rejects.toMatchObject({ code: "ERR_INVALID_REQUEST", where: "speculative" });
  }, 300_000);

  it("refusals: no draft model, another vocabulary, a recurrent draft model, bad options; disposing the draft model disposes the context", async () => {
    expect(() => context.generate(chat(model, "x"), { speculative: { type: "draft" } })).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    expect(() => context.generate(chat(model, "x"), { speculative: { type: "draft", ngramMin: 2 } } as never)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    expect(() => context.generate(chat(model, "x"), { speculative: { type: "ngram", pMin: 0.5 } } as never)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    expect(() => context.generate(chat(model, "x"), { speculative: { type: "draft", textLookup: true } } as never)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    expect(() => context.generate(chat(model, "x"), { speculative: { type: "ngram", textLookup: "yes" } } as never)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    expect(() => model.createContext({ draftModel: {} as never })).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    const phi = await loadTestModel({ vocabPath: join(packageRoot, "vendor", "llama.cpp", "models", "ggml-vocab-phi-3.gguf") });
    const lfm2 = await loadTestModel("lfm2");
    const vocabOnly = await loadTestModel("qwen2", { vocabOnly: true });
    try {
      expect(() => model.createContext({ draftModel: phi })).toThrow(/draftModel cannot draft for this model/);
      expect(() => model.createContext({ draftModel: lfm2 })).toThrow(/cannot roll back/);
      expect(() => model.createContext({ draftModel: vocabOnly })).toThrow(/vocabOnly/);
    } finally {
      phi.dispose();
      lfm2.dispose();
      vocabOnly.dispose();
    }
    const spare = await loadTestModel();
    const ctx = model.createContext({ contextSize: 512, threads: 1, draftModel: spare });
    const g = ctx.generate(chat(model, "Go on and on."), { temperature: 0, maxTokens: 200, speculative: DRAFT });
    spare.dispose();
    expect(ctx.disposed).toBe(true);
    expect((await g.result()).stats.stopReason).toBe("abort");
    expect(() => model.createContext({ draftModel: spare })).toThrow(expect.objectContaining({ code: "ERR_DISPOSED" }));
  }, 300_000);
});
