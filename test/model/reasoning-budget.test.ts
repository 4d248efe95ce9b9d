// The reasoningBudget option of context.generate() on the tiny random-weight model (issue 25): at
// most N tokens inside a block, then the message and the end marker forced, and the model goes on;
// budget 0; a block the model opens itself; the counts in the stats; bad options as coded errors.
// The random model never closes a block by itself, so every budget here is spent.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type GeneratedToken, type Model } from "../../lib/llama/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { codeOf, collect, text } from "./helpers.js";

let model: Model;
let context: Context;
/** A ChatML prompt whose last line opens a reasoning block, as R1-style templates end theirs. */
let openPrompt: Int32Array;
let plainPrompt: Int32Array;
const think = { start: "<think>", end: ["</think>"] };

beforeAll(async () => {
  model = await loadModel(await ensureTestModel("tiny"));
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
