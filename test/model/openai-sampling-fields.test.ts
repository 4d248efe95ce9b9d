// The sampler fields of the OpenAI contract on the tiny model: each one changes what is sampled
// (logit_bias, presence/frequency penalties), logprobs report one entry per sampled token, and n > 1
// runs one choice per sequence.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { createChatCompletion, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest, type CompletionRecord } from "../../lib/openai/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf } from "./helpers.js";

let model: Model;
let context: Context;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 2048, threads: 2 });
});

afterAll(() => model?.dispose());

const messages = [{ role: "user", content: "Count to ten" }];

/** A greedy completion and the token ids it sampled. */
async function greedy(extra: Partial<ChatCompletionRequest> = {}, maxTokens = 12): Promise<{ c: ChatCompletion; tokens: number[] }> {
  let record: CompletionRecord | undefined;
  const c = await createChatCompletion(context, { messages, temperature: 0, max_tokens: maxTokens, ...extra, stream: false }, { onRecord: (r) => (record = r) });
  return { c, tokens: record!.tokens };
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

describe("logit_bias", () => {
  it("-100 on the greedy first token changes the first token; +100 on a token forces it", async () => {
    const base = await greedy();
    const first = base.tokens[0]!;
    const banned = await greedy({ logit_bias: { [String(first)]: -100 } });
    expect(banned.tokens[0]).not.toBe(first);
    const forced = model.tokenize(" hello", { addSpecial: false, parseSpecial: false })[0]!;
    expect(base.tokens[0]).not.toBe(forced);
    const pushed = await greedy({ logit_bias: { [String(forced)]: 100 } }, 4);
    expect(pushed.tokens).toEqual([forced, forced, forced, forced]);
  });
});

describe("penalties", () => {
  it("a large presence or frequency penalty changes a greedy output that repeats tokens; a negative one repeats more", async () => {
    const distinct = (tokens: number[]) => new Set(tokens).size;
    const base = await greedy({}, 150);
    // the control: the greedy output repeats some tokens (else a penalty has nothing to change)
    expect(distinct(base.tokens)).toBeLessThan(base.tokens.length);
    for (const field of ["presence_penalty", "frequency_penalty"] as const) {
      const penalized = await greedy({ [field]: 2 }, 150);
      expect(penalized.tokens, field).not.toEqual(base.tokens);
      expect(distinct(penalized.tokens), field).toBeGreaterThan(distinct(base.tokens));
    }
    expect(distinct((await greedy({ presence_penalty: -2 }, 150)).tokens)).toBeLessThan(distinct(base.tokens));
  });
});

describe("logprobs", () => {
  it("one entry per sampled token, top_logprobs N each, log probabilities <= 0 and sorted; greedy picks the most likely", async () => {
    const { c, tokens } = await greedy({ logprobs: true, top_logprobs: 3 });
    const content = c.choices[0].logprobs!.content;
    expect(c.choices[0].logprobs!.refusal).toBeNull();
    expect(content.length).toBe(c.usage.completion_tokens);
    expect(content.length).toBe(tokens.length);
    for (const [i, e] of content.entries()) {
      expect(e.top_logprobs.length).toBe(3);
      expect(e.logprob).toBeLessThanOrEqual(0);
      const values = e.top_logprobs.map((t) => t.logprob);
      expect(values.every((v) => v <= 0)).toBe(true);
      expect([...values].sort((a, b) => b - a)).toEqual(values);
      // greedy without a grammar: the sampled token is the most likely one
      expect(e.logprob).toBeCloseTo(values[0]!, 5);
      expect(Buffer.from(e.bytes).equals(Buffer.from(model.tokenPiece(tokens[i]!)))).toBe(true);
      expect(e.top_logprobs[0]!.bytes).toEqual(e.bytes);
    }
    // the text the entries spell is the message
    expect(Buffer.from(content.flatMap((e) => e.bytes)).toString("utf8")).toBe(c.choices[0].message.content);
  });

  it("logprobs without top_logprobs: no alternatives; without logprobs: null", async () => {
    const { c } = await greedy({ logprobs: true });
    expect(c.choices[0].logprobs!.content.every((e) => e.top_logprobs.length === 0)).toBe(true);
    expect((await greedy()).c.choices[0].logprobs).toBeNull();
  });

  it("streamed: the chunks' entries add up to the completion's, each chunk carrying the tokens since the previous one", async () => {
    const whole = (await greedy({ logprobs: true, top_logprobs: 2 })).c;
    const stream = createChatCompletion(context, { messages, temperature: 0, max_tokens: 12, logprobs: true, top_logprobs: 2, stream: true });
    const chunks = await collect(stream);
    const streamed = chunks.flatMap((k) => k.choices.flatMap((x) => x.logprobs?.content ?? []));
    expect(streamed).toEqual(whole.choices[0].logprobs!.content);
    expect((await stream.completion).choices[0].logprobs!.content).toEqual(streamed);
  });
});

describe("n", () => {
  it("n=2 on two sequences: two choices, indexed, different with a temperature; streamed chunks carry the index", async () => {
    const shared = model.createContext({ contextSize: 1024, sequences: 2, threads: 2 });
    try {
      const seqs = [shared.getSequence(), shared.getSequence()];
      const c = await createChatCompletion(seqs, { messages, n: 2, temperature: 1, seed: 5, max_tokens: 10 });
      expect(c.choices.map((x) => x.index)).toEqual([0, 1]);
      expect(c.choices[0].message.content).not.toBe(c.choices[1]!.message.content);
      const chunks = await collect(createChatCompletion(seqs, { messages, n: 2, temperature: 1, seed: 5, max_tokens: 10, stream: true, stream_options: { include_usage: true } }));
      const text = (i: number) => chunks.flatMap((k) => k.choices.filter((x) => x.index === i).map((x) => x.delta.content ?? "")).join("");
      expect(text(0)).toBe(c.choices[0].message.content);
      expect(text(1)).toBe(c.choices[1]!.message.content);
      expect(chunks.at(-1)!.usage!.completion_tokens).toBe(c.usage.completion_tokens);
      // one usage chunk, after both choices finished
      expect(chunks.filter((k) => k.usage != null).length).toBe(1);
    } finally {
      shared.dispose();
    }
  });

  it("n=2: leaving the stream early, or an abort, ends both generations before it returns", async () => {
    const shared = model.createContext({ contextSize: 1024, sequences: 2, threads: 2 });
    try {
      const seqs = [shared.getSequence(), shared.getSequence()];
      let seen = 0;
      for await (const _ of createChatCompletion(seqs, { messages, n: 2, temperature: 1, max_tokens: 200, stream: true })) if (++seen === 6) break;
      expect(seqs.map((q) => q.busy)).toEqual([false, false]);
      const abort = new AbortController();
      const consume = async () => {
        for await (const _ of createChatCompletion(seqs, { messages, n: 2, temperature: 1, max_tokens: 200, stream: true, signal: abort.signal })) abort.abort(new Error("stop"));
      };
      await expect(consume()).rejects.toMatchObject({ code: "ERR_ABORTED" });
      expect(seqs.map((q) => q.busy)).toEqual([false, false]);
    } finally {
      shared.dispose();
    }
  });

  it("n=2 on a Context runs on two free sequences of it and gives them back; too few free: a 400 naming n that says why", async () => {
    const roomy = model.createContext({ contextSize: 1024, sequences: 2, threads: 2 });
    try {
      const c = await createChatCompletion(roomy, { messages, n: 2, temperature: 1, seed: 5, max_tokens: 10 });
      expect(c.choices.map((x) => x.index)).toEqual([0, 1]);
      expect(roomy.sequencesInUse).toBe(0);
      const chunks = await collect(createChatCompletion(roomy, { messages, n: 2, temperature: 1, seed: 5, max_tokens: 10, stream: true }));
      expect(new Set(chunks.flatMap((k) => k.choices.map((x) => x.index)))).toEqual(new Set([0, 1]));
      expect(roomy.sequencesInUse).toBe(0);
      const held = roomy.getSequence();
      const e = await codeOf(() => createChatCompletion(roomy, { messages, n: 2, max_tokens: 4 }));
      expect(e.where).toBe("n");
      expect(e.message).toMatch(/n=2 needs 2 free sequences; this context has 2 \(1 free\)/);
      held.dispose();
    } finally {
      roomy.dispose();
    }
  });

  it("n=2 on one Sequence (or a one-sequence context in use) is a 400 naming n", async () => {
    const e = await codeOf(() => createChatCompletion(context, { messages, n: 2, max_tokens: 4 }));
    expect(e.where).toBe("n");
    expect(e.message).toMatch(/n=2 needs 2 free sequences/);
    const seq = model.createContext({ contextSize: 512, threads: 1 }).getSequence();
    const s = await codeOf(() => createChatCompletion(seq, { messages, n: 2, max_tokens: 4 }));
    expect(s.where).toBe("n");
    expect(s.message).toMatch(/pass an array of 2 sequences/);
  });
});
