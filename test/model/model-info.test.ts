// Model facts: GGUF metadata (all keys, typed), chat template, vocabulary facts, token pieces.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
const progress: number[] = [];

beforeAll(async () => {
  model = await loadTestModel("qwen2", { onProgress: (p) => progress.push(p) });
});

afterAll(() => {
  model?.dispose();
});

describe("Model", () => {
  it("reports load progress up to 1", () => {
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toBe(1);
  });

  it("exposes every GGUF key with its type, arrays included", () => {
    const meta = model.metadata;
    expect(meta["general.architecture"]).toBe("qwen2");
    expect(typeof meta["qwen2.block_count"]).toBe("number");
    const tokens = meta["tokenizer.ggml.tokens"];
    expect(Array.isArray(tokens)).toBe(true);
    expect((tokens as string[]).length).toBe(model.vocabSize);
    expect(model.metadata).toBe(meta); // read once
  });

  it("returns the chat template, or null for a name it lacks", () => {
    expect(model.chatTemplate()).toContain("<|im_start|>");
    expect(model.chatTemplate("no-such-template")).toBeNull();
  });

  it("knows its special tokens", () => {
    const imStart = model.tokenize("<|im_start|>", { parseSpecial: true });
    const imEnd = model.tokenize("<|im_end|>", { parseSpecial: true });
    expect([imStart.length, imEnd.length]).toEqual([1, 1]);
    expect(model.isEog(imEnd[0]!)).toBe(true);
    expect(model.isEog(imStart[0]!)).toBe(false);
    expect(model.isControl(imStart[0]!)).toBe(true);
    expect(model.isSpecial(imStart[0]!)).toBe(true);
    expect(model.isSpecial(model.tokenize("hello")[0]!)).toBe(false);
    expect(model.eos === null || model.isEog(model.eos)).toBe(true);
    // Without parseSpecial the same text is ordinary text, several tokens.
    expect(model.tokenize("<|im_start|>").length).toBeGreaterThan(1);
  });

  it("renders control tokens only when asked", () => {
    const imStart = model.tokenize("<|im_start|>", { parseSpecial: true })[0]!;
    expect(model.tokenPiece(imStart).length).toBe(0);
    expect(new TextDecoder().decode(model.tokenPiece(imStart, { special: true }))).toBe("<|im_start|>");
    expect(model.detokenize([imStart], { special: true })).toBe("<|im_start|>");
    expect(model.detokenize([imStart])).toBe("");
  });

  it("pieces are bytes: a character may span several pieces", () => {
    const text = "héllo 😀 𝔘 世界"; // 𝔘 is two tokens in the Qwen2 vocabulary
    const ids = model.tokenize(text);
    const bytes = Buffer.concat(Array.from(ids, (id) => model.tokenPiece(id)));
    expect(bytes.toString("utf8")).toBe(text);
    expect(model.detokenize(ids)).toBe(text);
    const partial = Array.from(ids).some((id) => {
      const piece = model.tokenPiece(id);
      return Buffer.from(piece).toString("utf8").includes("\uFFFD");
    });
    expect(partial).toBe(true);
  });

  it("validates token ids", () => {
    expect(() => model.tokenPiece(-1)).toThrow(RangeError);
    expect(() => model.tokenPiece(model.vocabSize)).toThrow(RangeError);
    expect(() => model.detokenize([model.vocabSize])).toThrow(RangeError);
    expect(() => model.isEog(1.5)).toThrow(TypeError);
  });

  it("addSpecial follows the tokenizer config", () => {
    const plain = model.tokenize("hi");
    const withSpecial = model.tokenize("hi", { addSpecial: true });
    expect(withSpecial.length - plain.length).toBe((model.addBos ? 1 : 0) + (model.addEos ? 1 : 0));
  });
});
