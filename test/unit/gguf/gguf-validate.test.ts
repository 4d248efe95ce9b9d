// validateGguf: what would make llama.cpp abort is a coded error naming the key or tensor, and
// every real file passes. (test/fuzz/gguf.test.ts runs the whole damaged corpus through
// loadModel in child processes.)
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { parseGguf, readGgufFile, readGgufFileSync, validateGguf, type GgufValue } from "../../../lib/gguf/index.js";
import { LlamapegError } from "../../../lib/errors.js";
import { ensureTestModel } from "../../../lib/test-model/index.js";
import { miniModel } from "../../fuzz/gguf-corpus.js";
import { encodeRawGguf, type RawGguf } from "../../fuzz/gguf-encode.js";

const base = miniModel();
const u32 = (value: number): GgufValue => ({ type: "uint32", value });
const f32 = (value: number): GgufValue => ({ type: "float32", value });

function withKey(key: string, v: GgufValue | undefined, g: RawGguf = base): RawGguf {
  const md = g.metadata.filter(([k]) => k !== key);
  if (v !== undefined) md.push([key, v]);
  return { ...g, metadata: md };
}

function check(g: RawGguf, vocabOnly = false): LlamapegError | undefined {
  try {
    validateGguf(parseGguf(encodeRawGguf(g)), { vocabOnly, source: "m.gguf" });
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
}

const tokens = (base.metadata.find(([k]) => k === "tokenizer.ggml.tokens")![1] as { value: string[] }).value;
const withToken = (i: number, s: string) => withKey("tokenizer.ggml.tokens", { type: "array", itemType: "string", value: tokens.map((t, j) => (j === i ? s : t)) });

describe("validateGguf", () => {
  it("passes the valid base model, the test model and every vendored vocabulary", async () => {
    expect(check(base)).toBeUndefined();
    expect(() => readGgufFileSync(ensureTestModelSync(), { validate: true })).not.toThrow();
    const dir = join(import.meta.dirname, "../../../vendor/llama.cpp/models");
    const vocabs = readdirSync(dir).filter((f) => /^ggml-vocab-.*\.gguf$/.test(f)).filter(vocabInRun); // all with LLAMAPEG_FULL=1
    expect(vocabs.length).toBeGreaterThan(FULL ? 15 : 5);
    for (const f of vocabs) await readGgufFile(join(dir, f), { validate: true, vocabOnly: true });
  });

  // each of these aborts the process in llama.cpp (test/fuzz/gguf.test.ts shows it)
  const aborts: [string, RawGguf, string][] = [
    ["block_count 0", withKey("qwen2.block_count", u32(0)), "qwen2.block_count"],
    ["block_count 513", withKey("qwen2.block_count", u32(513)), "qwen2.block_count"],
    ["a layer with 0 KV heads", withKey("qwen2.attention.head_count_kv", { type: "array", itemType: "int32", value: Int32Array.of(2, 0) }), "qwen2.attention.head_count_kv"],
    ["rms epsilon NaN", withKey("qwen2.attention.layer_norm_rms_epsilon", f32(NaN)), "layer_norm_rms_epsilon"],
    ["rms epsilon below 0", withKey("qwen2.attention.layer_norm_rms_epsilon", f32(-1e-6)), "layer_norm_rms_epsilon"],
    ["an unknown rope scaling type", withKey("qwen2.rope.scaling.type", { type: "string", value: "bogus" }), "qwen2.rope.scaling.type"],
    ["2000 experts", withKey("qwen2.expert_count", u32(2000)), "qwen2.expert_count"],
    ["experts used without experts", withKey("qwen2.expert_used_count", u32(2)), "qwen2.expert_used_count"],
    ["nextn layers past the layers", withKey("qwen2.nextn_predict_layers", u32(3)), "qwen2.nextn_predict_layers"],
    ["general.alignment 16", { ...withKey("general.alignment", u32(16)), alignment: 16 }, "general.alignment"],
    ["a duplicate token", withToken(5, tokens[6]!), "tokenizer.ggml.tokens[6]"],
    ["a token with a NUL", withToken(5, "a\0b"), "tokenizer.ggml.tokens[5]"],
    ["an empty token that collides with [EMPTY_5]", withKey("tokenizer.ggml.tokens", { type: "array", itemType: "string", value: tokens.map((t, j) => (j === 5 ? "" : j === 6 ? "[EMPTY_5]" : t)) }), "tokenizer.ggml.tokens[6]"],
    ["no tokenizer", withKey("tokenizer.ggml.model", { type: "string", value: "none" }), "tokenizer.ggml.model"],
  ];
  for (const [name, g, where] of aborts) {
    it(`${name}: coded, naming ${where}`, () => {
      const e = check(g);
      expect(e?.code).toMatch(/^ERR_MODEL_(CORRUPT|UNSUPPORTED)$/);
      expect(e!.where).toContain(where);
      expect(e!.where).toMatch(/^m\.gguf:/);
    });
  }

  it("tokenizer checks apply to vocab-only loads, hyper-parameters do not", () => {
    expect(check(withToken(5, tokens[6]!), true)?.code).toBe("ERR_MODEL_CORRUPT");
    expect(check(withKey("qwen2.block_count", u32(0)), true)).toBeUndefined();
  });

  it("hybrid architectures may have layers without attention", () => {
    const g = withKey("general.architecture", { type: "string", value: "jamba" });
    const md = g.metadata.map(([k, v]) => [k.replace(/^qwen2\./, "jamba."), v] as [string, GgufValue]);
    expect(check({ ...g, metadata: [...md.filter(([k]) => k !== "jamba.attention.head_count_kv"), ["jamba.attention.head_count_kv", { type: "array", itemType: "int32", value: Int32Array.of(2, 0) }]] })).toBeUndefined();
  });

  it("nested metadata arrays 10,000 deep are ERR_MODEL_CORRUPT, not a RangeError", () => {
    let v: GgufValue = { type: "array", itemType: "uint8", value: Uint8Array.of(1) };
    for (let i = 0; i < 10_000; i++) v = { type: "array", itemType: "array", value: [v] } as GgufValue;
    let e: unknown;
    try {
      parseGguf(encodeRawGguf(withKey("x.nested", v)));
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(LlamapegError);
    expect((e as LlamapegError).code).toBe("ERR_MODEL_CORRUPT");
    expect((e as LlamapegError).message).toContain("nest");
    // two levels are fine for the reader, and unsupported for llama.cpp
    let two: GgufValue = { type: "array", itemType: "uint8", value: Uint8Array.of(1) };
    two = { type: "array", itemType: "array", value: [two] } as GgufValue;
    expect(check(withKey("x.nested", two))?.code).toBe("ERR_MODEL_UNSUPPORTED");
  });

  it("readGgufFile validates on request only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "llamapeg-validate-"));
    const path = join(dir, "bad.gguf");
    writeFileSync(path, encodeRawGguf(withKey("qwen2.block_count", u32(0))));
    expect((await readGgufFile(path)).metadata.get("qwen2.block_count")).toEqual(u32(0));
    await expect(readGgufFile(path, { validate: true })).rejects.toMatchObject({ code: "ERR_MODEL_CORRUPT", where: `${path}:qwen2.block_count` });
    expect(() => readGgufFileSync(path, { validate: true })).toThrow(/1 to 512 layers/);
  });
});

let testModel: string | undefined;
function ensureTestModelSync(): string {
  if (testModel === undefined) throw new Error("beforeAll did not run");
  return testModel;
}
import { beforeAll } from "vitest";
import { FULL, vocabInRun } from "../../support/full.js";
beforeAll(async () => {
  testModel = await ensureTestModel("tiny");
});
