// Option validation of the llama classes: runs before any native code, so no addon is needed.
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { escapeRegex, resolveGenerateOptions } from "../../../lib/llama/generate-options.js";
import { loadModel } from "../../../lib/llama/model.js";
import type { Model } from "../../../lib/llama/model.js";

// A stand-in for the few Model members option resolution uses: a toy vocabulary where
// "<tool_call>" is one special token (7), "yes" is one ordinary token (8) and anything else is
// one token per character.
const fakeModel = {
  vocabSize: 100,
  tokenize(text: string, options?: { parseSpecial?: boolean }) {
    if (text === "<tool_call>" && options?.parseSpecial) return Int32Array.of(7);
    if (text === "yes") return Int32Array.of(8);
    return Int32Array.from([...text].map((_, i) => 10 + i));
  },
  isSpecial(token: number) {
    return token === 7;
  },
} as unknown as Model;

describe("resolveGenerateOptions", () => {
  it("fills the documented defaults", () => {
    const { native, signal } = resolveGenerateOptions(fakeModel, undefined);
    expect(signal).toBeUndefined();
    expect(native).toMatchObject({
      maxTokens: -1,
      temperature: 0.8,
      topK: 40,
      topP: 0.95,
      minP: 0.05,
      seed: -1,
      repeatPenalty: 1,
      special: false,
      grammar: null,
      grammarResample: "fast",
    });
    expect(Array.from(native.stopTokens)).toEqual([]);
  });

  it.each([
    [{ temperature: -1 }, RangeError, "temperature"],
    [{ temperature: "hot" }, TypeError, "temperature"],
    [{ topP: 1.5 }, RangeError, "topP"],
    [{ minP: -0.1 }, RangeError, "minP"],
    [{ topK: 1.5 }, TypeError, "topK"],
    [{ maxTokens: -2 }, RangeError, "maxTokens"],
    [{ seed: 2 ** 32 }, RangeError, "seed"],
    [{ repeatPenalty: 0 }, RangeError, "repeatPenalty"],
    [{ stopTokens: [100] }, RangeError, "stopTokens[0]"],
    [{ stopTokens: "x" }, TypeError, "stopTokens"],
    [{ signal: {} }, TypeError, "signal"],
    [{ grammar: "root ::= x" }, TypeError, "grammar"],
    [{ grammar: { gbnf: "" } }, TypeError, "grammar.gbnf"],
    [{ grammar: { gbnf: "root ::= \"a\"", triggerWords: ["a"] } }, TypeError, "lazy"],
    [{ grammar: { gbnf: "root ::= \"a\"", lazy: true } }, TypeError, "trigger"],
    [{ grammar: { gbnf: "root ::= \"a\"", rot: "x" } }, TypeError, "rot"],
    [{ temprature: 1 }, TypeError, "temprature"],
    [{ grammarResample: "quick" }, TypeError, "grammarResample"],
  ])("rejects %j", (options, type, mention) => {
    expect(() => resolveGenerateOptions(fakeModel, options as never)).toThrow(type);
    expect(() => resolveGenerateOptions(fakeModel, options as never)).toThrow(mention);
  });

  it("turns a one-special-token trigger word into a token trigger and preserves it", () => {
    const { native } = resolveGenerateOptions(fakeModel, {
      grammar: { gbnf: 'root ::= "x"', lazy: true, triggerWords: ["<tool_call>", "yes", "a.b"] },
    });
    expect(Array.from(native.grammar!.triggerTokens)).toEqual([7]);
    expect(native.grammar!.triggerPatterns).toEqual(["yes", "a\\.b"]);
    expect(Array.from(native.preservedTokens)).toEqual([7]);
    expect(native.grammar!.root).toBe("root");
  });

  it("requires preserved tokens to be single tokens", () => {
    expect(Array.from(resolveGenerateOptions(fakeModel, { preservedTokens: ["<tool_call>"] }).native.preservedTokens)).toEqual([7]);
    let caught: unknown;
    try {
      resolveGenerateOptions(fakeModel, { preservedTokens: ["two"] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(LlamapegError);
    expect((caught as LlamapegError).code).toBe("ERR_INVALID_ARGUMENT");
    expect((caught as LlamapegError).where).toBe("preservedTokens[0]");
  });
});

describe("escapeRegex", () => {
  it("escapes every regex metacharacter so the word matches literally", () => {
    const word = "a.b*c+d?e(f)g[h]i{j}k|l^m$n\\o";
    const re = new RegExp(escapeRegex(word));
    expect(re.test(word)).toBe(true);
    expect(re.test("aXb*c+d?e(f)g[h]i{j}k|l^m$n\\o")).toBe(false);
  });
});

describe("loadModel argument checks", () => {
  it.each([
    [123, undefined, TypeError],
    ["", undefined, TypeError],
    ["m.gguf", { gpuLayers: 1.5 }, TypeError],
    ["m.gguf", { gpuLayers: -2 }, RangeError],
    ["m.gguf", { useMmap: "yes" }, TypeError],
    ["m.gguf", { onProgress: 1 }, TypeError],
    ["m.gguf", { vocab: true }, TypeError],
  ])("loadModel(%j, %j) rejects before native code", async (path, options, type) => {
    await expect(loadModel(path as never, options as never)).rejects.toThrow(type);
  });
});
