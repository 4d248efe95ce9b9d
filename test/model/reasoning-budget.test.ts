// The reasoning budget on the tiny random-weight model (issue 25). generate()'s reasoningBudget: at
// most N tokens inside a block, then the message and the end marker forced, and the model goes on;
// budget 0; a block the model opens itself; the counts in the stats; bad options as coded errors.
// createChatCompletion: reasoning_budget_tokens on a template that opens the block (R1), stream and
// not, the usage's reasoning_tokens, budget 0, a template without reasoning, a call after a forced
// close. The random model never closes a block by itself, so every budget here is spent.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { readFileSync } from "node:fs";
import { join } from "node:path";

import type { Context, GeneratedToken, Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { createChatCompletion, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest } from "../../lib/openai/index.js";
import type { CompletionRecord } from "../../lib/openai/record.js";
import { loadTestModel } from "../support/models.js";
import { codeOf, collect, text } from "./helpers.js";

let model: Model;
let context: Context;
/** A ChatML prompt whose last line opens a reasoning block, as R1-style templates end theirs. */
let openPrompt: Int32Array;
let plainPrompt: Int32Array;
const think = { start: "<think>", end: ["</think>"] };

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 1024, threads: 2 });
  openPrompt = model.tokenize("<|im_start|>user\nThink first.<|im_end|>\n<|im_start|>assistant\n<think>\n", { parseSpecial: true });
  plainPrompt = model.tokenize("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", { parseSpecial: true });
});

afterEach(() => {
  if (context.busy) {
    context.dispose();
    context = model.createContext({ contextSize: 1024, threads: 2 });
  }
});

afterAll(() => {
  model?.dispose();
});

/** The bytes of the pieces (random tokens may split characters: compare bytes, not decoded text). */
function bytesOf(items: GeneratedToken[]): Buffer {
  return Buffer.concat(items.map((i) => i.piece));
}

/** Whether `bytes` ends inside a UTF-8 character (a lead byte whose continuation bytes have not come). */
function endsMidCharacter(bytes: Uint8Array): boolean {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const c = bytes[bytes.length - back]!;
    if ((c & 0xc0) === 0x80) continue;
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return back < need;
  }
  return false;
}

/**
 * The tokens before the first forced one (the block's own), checked against the budget: at most
 * `budget`, or more only while the budget's last token left a character unfinished (the forced
 * text waits for its last byte, as llama.cpp's sampler does).
 */
function checkBlock(items: GeneratedToken[], budget: number): GeneratedToken[] {
  const firstForced = items.findIndex((i) => i.forced === true);
  expect(firstForced, "the budget was spent: the end marker was forced").toBeGreaterThanOrEqual(0);
  const block = items.slice(0, firstForced);
  // Never early: the random model does not close a block itself, so the forcing is the budget's.
  expect(block.length).toBeGreaterThanOrEqual(budget);
  for (let k = budget; k < block.length; k++) {
    expect(endsMidCharacter(bytesOf(block.slice(0, k))), `token ${k} of the block comes after the budget of ${budget} though no character was left unfinished`).toBe(true);
  }
  return block;
}

describe("reasoningBudget", () => {
  it("a budget of N on a prompt that opens a block: at most N block tokens, then the end marker forced, then the answer", async () => {
    for (const budget of [5, 12]) {
      const generation = context.generate(openPrompt, { maxTokens: budget + 20, seed: 3, temperature: 1, reasoningBudget: { tokens: budget, ...think, open: true } });
      const items = await collect(generation);
      const block = checkBlock(items, budget);
      const end = Array.from(model.tokenize("</think>", { parseSpecial: true }));
      const forced = items.filter((i) => i.forced === true);
      expect(forced.map((i) => i.token)).toEqual(end);
      // The forced run follows the block at once, and the model goes on after it.
      expect(items.slice(block.length, block.length + end.length).every((i) => i.forced === true)).toBe(true);
      expect(items.length).toBeGreaterThan(block.length + end.length);
      expect(bytesOf(items).subarray(bytesOf(block).length).toString("latin1").startsWith("</think>")).toBe(true);
      const stats = generation.stats!;
      expect(stats.reasoningTokens).toBe(block.length);
      expect(stats.reasoningForcedTokens).toBe(end.length);
      expect(stats.generatedTokens).toBe(items.length);
    }
  });

  it("the message is forced before the end marker", async () => {
    const message = " Time to answer.";
    const items = await collect(context.generate(openPrompt, { maxTokens: 40, seed: 5, temperature: 1, reasoningBudget: { tokens: 6, ...think, message, open: true } }));
    const block = checkBlock(items, 6);
    const forced = items.filter((i) => i.forced === true);
    expect(text(forced)).toBe(`${message}</think>`);
    expect(bytesOf(items).subarray(bytesOf(block).length).toString("utf8").startsWith(`${message}</think>`)).toBe(true);
  });

  it("budget 0 closes an open block before the first sampled token", async () => {
    const generation = context.generate(openPrompt, { maxTokens: 12, seed: 1, reasoningBudget: { tokens: 0, ...think, open: true } });
    const items = await collect(generation);
    expect(text(items).startsWith("</think>")).toBe(true);
    expect(items[0]!.forced).toBe(true);
    expect(generation.stats!.reasoningTokens).toBe(0);
  });

  it("a block the model opens itself is bounded from its start marker on", async () => {
    // The markers are matched as the tokenizer writes them (their token ids, as llama.cpp does).
    // The grammar makes the model open a block and then wants </think> and an answer; a bias on
    // the tokens of "<think>" makes it spell the marker as the tokenizer does.
    const startIds = Array.from(model.tokenize("<think>", { parseSpecial: true }));
    const grammar = { gbnf: 'root ::= "<think>" [a-z ]* "</think>" [a-z ]+' };
    const logitBias = Object.fromEntries(startIds.map((id) => [id, 30]));
    const generation = context.generate(plainPrompt, { maxTokens: 40, seed: 2, temperature: 1, grammar, logitBias, reasoningBudget: { tokens: 4, ...think } });
    const items = await collect(generation);
    expect(items.slice(0, startIds.length).map((i) => i.token)).toEqual(startIds);
    expect(text(items)).toContain("</think>");
    // The block's tokens are counted from after the start marker.
    const block = checkBlock(items.slice(startIds.length), 4);
    expect(generation.stats!.reasoningTokens).toBe(block.length);
    expect(text(items.filter((i) => i.forced === true))).toBe("</think>");
  });

  it("no start marker in the output and no open prompt: nothing is counted or forced", async () => {
    const generation = context.generate(plainPrompt, { maxTokens: 20, seed: 4, reasoningBudget: { tokens: 0, ...think } });
    const items = await collect(generation);
    expect(items.some((i) => i.forced === true)).toBe(false);
    expect(generation.stats!.reasoningTokens).toBe(0);
    expect(generation.stats!.reasoningForcedTokens).toBe(0);
  });

  it("tokens: Infinity counts without a bound; no budget: no counts in the stats", async () => {
    const counted = context.generate(openPrompt, { maxTokens: 15, seed: 6, reasoningBudget: { tokens: Infinity, ...think, open: true } });
    const items = await collect(counted);
    expect(items.some((i) => i.forced === true)).toBe(false);
    // The random model never writes </think>: every token is inside the block.
    expect(text(items)).not.toContain("</think>");
    expect(counted.stats!.reasoningTokens).toBe(items.length);
    const plain = context.generate(openPrompt, { maxTokens: 5, seed: 6 });
    await collect(plain);
    expect(plain.stats!.reasoningTokens).toBeUndefined();
    expect(plain.stats!.reasoningForcedTokens).toBeUndefined();
  });

  it("bad options are ERR_INVALID_ARGUMENT naming the option", async () => {
    const cases: [unknown, string][] = [
      [{ tokens: -1, ...think }, "reasoningBudget.tokens"],
      [{ tokens: 1.5, ...think }, "reasoningBudget.tokens"],
      [{ ...think }, "reasoningBudget.tokens"],
      [{ tokens: 4, start: "<think>", end: [] }, "reasoningBudget.end"],
      [{ tokens: 4, start: "<think>", end: [""] }, "reasoningBudget.end"],
      [{ tokens: 4, start: 1, end: ["</think>"] }, "reasoningBudget.start"],
      [{ tokens: 4, ...think, open: "yes" }, "reasoningBudget.open"],
      [{ tokens: 4, ...think, budget: 3 }, "reasoningBudget"],
      ["4", "reasoningBudget"],
    ];
    for (const [value, field] of cases) {
      const e = await codeOf(() => context.generate(plainPrompt, { maxTokens: 4, reasoningBudget: value as never }));
      expect(e.code).toBe("ERR_INVALID_ARGUMENT");
      expect(e.message).toContain(field);
    }
    expect(context.busy).toBe(false);
  });
});

const templateFile = (name: string) => readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", `${name}.jinja`), "utf8");

/** A non-stream request (createChatCompletion resolves to the completion). */
type Whole = ChatCompletionRequest & { stream?: false };

async function chunksOf(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

describe("reasoning budget through createChatCompletion", () => {
  const r1 = () => templateFile("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B");
  const ask = (over: Partial<Whole> = {}): Whole => ({ messages: [{ role: "user", content: "Think first." }], chat_template: r1(), seed: 9, temperature: 1, max_tokens: 30, ...over });

  it("reasoning_budget_tokens N on R1's template: N reasoning tokens, the block closed where the usage says, content after it", async () => {
    let record: CompletionRecord | undefined;
    const c = await createChatCompletion(context, ask({ reasoning_budget_tokens: 8 }), { onRecord: (r) => (record = r) });
    const reasoning = c.usage.completion_tokens_details!.reasoning_tokens;
    expect(reasoning).toBeGreaterThanOrEqual(8);
    expect(reasoning).toBeLessThanOrEqual(8 + 3);
    const message = c.choices[0].message;
    expect(message.reasoning_content?.length ?? 0).toBeGreaterThan(0);
    expect((message.content ?? "").length).toBeGreaterThan(0);
    // The output's bytes: the first `reasoning` tokens, then the forced </think>.
    const pieces = record!.pieces.map((b) => Buffer.from(b, "base64"));
    const out = Buffer.concat(pieces);
    const at = Buffer.concat(pieces.slice(0, reasoning)).length;
    expect(out.indexOf("</think>")).toBe(at);
    expect(c.usage.completion_tokens).toBe(record!.tokens.length);
    expect(c.llamapeg.warnings).toEqual([]);
  });

  it("stream and not: the same chunks' message, the usage chunk carries the reasoning tokens", async () => {
    const whole = await createChatCompletion(context, ask({ reasoning_budget_tokens: 6, reasoning_budget_message: " Enough." }));
    const chunks = await chunksOf(createChatCompletion(context, { ...ask({ reasoning_budget_tokens: 6, reasoning_budget_message: " Enough." }), stream: true as const, stream_options: { include_usage: true } }));
    const reasoning = chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? "").join("");
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(reasoning).toBe(whole.choices[0].message.reasoning_content);
    expect(content).toBe(whole.choices[0].message.content);
    // the message is forced inside the block, before </think>
    expect(reasoning.trimEnd().endsWith("Enough.")).toBe(true);
    expect(chunks.at(-1)!.usage).toEqual(whole.usage);
    expect(whole.usage.completion_tokens_details!.reasoning_tokens).toBeGreaterThanOrEqual(6);
  });

  it("budget 0: R1's template renders thinking off (a closed block in the prompt); with thinking forced on, the block closes at once", async () => {
    const off = await createChatCompletion(context, ask({ reasoning_budget_tokens: 0, max_tokens: 10 }));
    expect(off.choices[0].message.reasoning_content).toBeUndefined();
    expect(off.usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
    let record: CompletionRecord | undefined;
    const on = await createChatCompletion(context, ask({ reasoning_budget_tokens: 0, max_tokens: 10, chat_template_kwargs: { enable_thinking: true } }), { onRecord: (r) => (record = r) });
    const out = Buffer.concat(record!.pieces.map((b) => Buffer.from(b, "base64"))).toString("latin1");
    expect(out.startsWith("</think>")).toBe(true);
    expect(on.usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
    expect((on.choices[0].message.content ?? "").length).toBeGreaterThan(0);
  });

  it("no budget: the usage still counts the block's tokens (all of them: the random model never closes it)", async () => {
    const c = await createChatCompletion(context, ask({ max_tokens: 12 }));
    expect(c.usage.completion_tokens_details).toEqual({ reasoning_tokens: 12 });
    expect(c.choices[0].finish_reason).toBe("length");
  });

  it("a template without reasoning markers (the model's Qwen2.5): the budget is a no-op with a warning; 0 reasoning tokens", async () => {
    const base: Whole = { messages: [{ role: "user", content: "hi" }], seed: 4, max_tokens: 10 };
    const free = await createChatCompletion(context, base);
    const budgeted = await createChatCompletion(context, { ...base, reasoning_budget_tokens: 2 });
    expect(budgeted.choices[0].message).toEqual(free.choices[0].message);
    expect(budgeted.usage.completion_tokens_details).toEqual({ reasoning_tokens: 0 });
    expect(free.llamapeg.warnings).toEqual([]);
    expect(budgeted.llamapeg.warnings).toEqual(["reasoning budget: this chat template has no reasoning markers, so the budget has no effect"]);
  });

  it("a tool call after a forced close still parses (QwQ's template, tool_choice required: the grammar's reasoning block, then calls)", async () => {
    const tools = [{ type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } }];
    const request: Whole = { messages: [{ role: "user", content: "Pick one." }], chat_template: templateFile("Qwen-QwQ-32B"), tools, tool_choice: "required", seed: 3, temperature: 1, max_tokens: 80 };
    // Unbounded, the random model reasons until max_tokens and never calls.
    const free = await createChatCompletion(context, request);
    expect(free.choices[0].message.tool_calls).toBeUndefined();
    expect(free.usage.completion_tokens_details).toEqual({ reasoning_tokens: 80 });
    let record: CompletionRecord | undefined;
    const c: ChatCompletion = await createChatCompletion(context, { ...request, reasoning_budget_tokens: 4 }, { onRecord: (r) => (record = r) });
    const reasoning = c.usage.completion_tokens_details!.reasoning_tokens;
    expect(reasoning).toBeGreaterThanOrEqual(4);
    expect(reasoning).toBeLessThanOrEqual(4 + 3);
    const out = Buffer.concat(record!.pieces.map((b) => Buffer.from(b, "base64")));
    expect(out.indexOf("</think>")).toBe(Buffer.concat(record!.pieces.slice(0, reasoning).map((b) => Buffer.from(b, "base64"))).length);
    // The first call is whole (the grammar then lets the random model start another one, cut by max_tokens).
    const call = c.choices[0].message.tool_calls![0]!;
    expect(call.function.name).toBe("pick");
    const n = (JSON.parse(call.function.arguments) as { n: number }).n;
    expect(Number.isInteger(n) && n >= 0 && n <= 9).toBe(true);
    // Only the cut call after it can be reported (its arguments end mid-JSON).
    for (const e of c.llamapeg.parse_errors) expect(e.message).not.toMatch(/tool call 0\b/);
  });

  it("with tools offered (tool_choice auto: a lazy grammar waiting for its trigger), the forced close goes through as well", async () => {
    const tools = [{ type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } } }];
    let record: CompletionRecord | undefined;
    const c = await createChatCompletion(context, { ...ask({ reasoning_budget_tokens: 5 }), chat_template: templateFile("Qwen-QwQ-32B"), tools }, { onRecord: (r) => (record = r) });
    expect(record!.plan.grammar?.lazy).toBe(true);
    const reasoning = c.usage.completion_tokens_details!.reasoning_tokens;
    expect(reasoning).toBeGreaterThanOrEqual(5);
    expect(reasoning).toBeLessThanOrEqual(5 + 3);
    const pieces = record!.pieces.map((b) => Buffer.from(b, "base64"));
    expect(Buffer.concat(pieces).indexOf("</think>")).toBe(Buffer.concat(pieces.slice(0, reasoning)).length);
    expect((c.choices[0].message.content ?? "").length).toBeGreaterThan(0);
  });

  it("n = 2: each choice has the budget, and the usage sums their reasoning tokens as it sums their tokens", async () => {
    const two = model.createContext({ contextSize: 1024, sequences: 2, threads: 1 });
    try {
      const both = await createChatCompletion(two, ask({ reasoning_budget_tokens: 3, n: 2, max_tokens: 12 }));
      const first = await createChatCompletion(context, ask({ reasoning_budget_tokens: 3, max_tokens: 12 }));
      const second = await createChatCompletion(context, ask({ reasoning_budget_tokens: 3, max_tokens: 12, seed: 10 }));
      expect(both.choices.map((c) => c.message)).toEqual([first.choices[0].message, second.choices[0].message]);
      expect(both.usage.completion_tokens_details!.reasoning_tokens).toBe(first.usage.completion_tokens_details!.reasoning_tokens + second.usage.completion_tokens_details!.reasoning_tokens);
    } finally {
      two.dispose();
    }
  });

  it("bad budget fields are 400s naming the field, before anything is generated", async () => {
    for (const [field, value] of [["reasoning_budget_tokens", -5], ["thinking_budget_tokens", "8"], ["reasoning_budget_message", 1]] as const) {
      const e = await codeOf(() => createChatCompletion(context, ask({ [field]: value } as Partial<Whole>)));
      expect(e.code).toBe("ERR_INVALID_REQUEST");
      expect(e.where).toBe(field);
    }
  });
});
