import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readGgufFileSync, type GgufFile, type GgufValue } from "../../lib/gguf/index.js";
import { TEST_MODEL_PRESETS, ensureTestModel, packageRoot, presetParameters, writeTestModel, type TestModelOptions } from "../../lib/test-model/index.js";
import { float32ToFloat16Bits } from "../../lib/test-model/random.js";
import { brotliDecompressSync } from "node:zlib";
import { existsSync } from "node:fs";

const dir = mkdtempSync(join(tmpdir(), "llamapeg-test-model-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const llamaDir = process.env.LLAMA_CPP_DIR ?? join(packageRoot(), "vendor", "llama.cpp");
const vocabPath = join(llamaDir, "models", "ggml-vocab-qwen2.gguf");
const templatePath = join(llamaDir, "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja");

// Narrow and shallow: the vocabulary matrices still make it ~20 MB, but it writes in about a second.
const mini: Partial<TestModelOptions> = { nEmbd: 32, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 64, seed: 7 };

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

function tensorValues(path: string, file: GgufFile, name: string, count: number): number[] {
  const t = file.tensors.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no tensor ${name}`);
  const start = file.dataOffset + t.offset;
  const fd = readFileSync(path).subarray(start, start + count * (t.type === 1 ? 2 : 4));
  if (t.type === 0) return [...new Float32Array(fd.buffer.slice(fd.byteOffset, fd.byteOffset + fd.byteLength))];
  return [...new Uint16Array(fd.buffer.slice(fd.byteOffset, fd.byteOffset + fd.byteLength))].map(halfToFloat);
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

// vitest's deep equality is slow on 151k-element arrays; compare element by element instead.
function expectSameValue(actual: GgufValue | undefined, expected: GgufValue | undefined, key: string): void {
  expect(actual?.type, key).toBe(expected?.type);
  if (actual?.type === "array" && expected?.type === "array") {
    expect(actual.itemType, key).toBe(expected.itemType);
    const x = actual.value as ArrayLike<unknown>;
    const y = expected.value as ArrayLike<unknown>;
    expect(x.length, key).toBe(y.length);
    let firstDiff = -1;
    for (let i = 0; i < x.length && firstDiff < 0; i++) if (x[i] !== y[i]) firstDiff = i;
    expect(firstDiff, `${key}: first differing index`).toBe(-1);
  } else {
    expect(actual, key).toEqual(expected);
  }
}

describe("writeTestModel", () => {
  const a = join(dir, "a.gguf");
  const b = join(dir, "b.gguf");
  const c = join(dir, "c.gguf");
  beforeAll(() => {
    writeTestModel(a, mini);
    writeTestModel(b, mini);
    writeTestModel(c, { ...mini, seed: 8 });
  });

  it("is deterministic by seed", () => {
    expect(sha256(a)).toBe(sha256(b));
    expect(sha256(a)).not.toBe(sha256(c));
  });

  it("has qwen2 hparams and exactly the tensors llama.cpp's qwen2 loader asks for", () => {
    const file = readGgufFileSync(a);
    const num = (key: string) => file.metadata.get(key)?.value;
    expect(num("general.architecture")).toBe("qwen2");
    expect(num("qwen2.embedding_length")).toBe(32);
    expect(num("qwen2.block_count")).toBe(2);
    expect(num("qwen2.feed_forward_length")).toBe(64);
    expect(num("qwen2.attention.head_count")).toBe(4);
    expect(num("qwen2.attention.head_count_kv")).toBe(2);
    expect(num("qwen2.context_length")).toBe(TEST_MODEL_PRESETS.tiny.contextLength);
    expect(num("qwen2.rope.freq_base")).toBe(1_000_000);
    expect(num("qwen2.attention.layer_norm_rms_epsilon")).toBeCloseTo(1e-6, 12);

    const dims = Object.fromEntries(file.tensors.map((t) => [t.name, t.dims]));
    const vocab = 151936;
    const layer = (i: number) => ({
      [`blk.${i}.attn_norm.weight`]: [32],
      [`blk.${i}.attn_q.weight`]: [32, 32],
      [`blk.${i}.attn_k.weight`]: [32, 16],
      [`blk.${i}.attn_v.weight`]: [32, 16],
      [`blk.${i}.attn_q.bias`]: [32],
      [`blk.${i}.attn_k.bias`]: [16],
      [`blk.${i}.attn_v.bias`]: [16],
      [`blk.${i}.attn_output.weight`]: [32, 32],
      [`blk.${i}.ffn_norm.weight`]: [32],
      [`blk.${i}.ffn_gate.weight`]: [32, 64],
      [`blk.${i}.ffn_up.weight`]: [32, 64],
      [`blk.${i}.ffn_down.weight`]: [64, 32],
    });
    expect(dims).toEqual({ "token_embd.weight": [32, vocab], "output_norm.weight": [32], "output.weight": [32, vocab], ...layer(0), ...layer(1) });
    // 2-D weights in F16, norms and biases in F32 (as llama.cpp's converter stores them)
    for (const t of file.tensors) expect(t.type, t.name).toBe(t.dims.length === 2 ? 1 : 0);
  });

  it("ships its sources in assets/: the vendored tokenizer and template, byte for byte", () => {
    const assets = join(packageRoot(), "assets");
    const vocab = brotliDecompressSync(readFileSync(join(assets, "ggml-vocab-qwen2.gguf.br")));
    // the hash assets/README.md states, and (with the sources vendored) the vendored bytes
    expect(createHash("sha256").update(vocab).digest("hex")).toBe("44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c");
    if (existsSync(vocabPath)) expect(createHash("sha256").update(vocab).digest("hex")).toBe(sha256(vocabPath));
    if (existsSync(templatePath)) expect(sha256(join(assets, "Qwen-Qwen2.5-7B-Instruct.jinja"))).toBe(sha256(templatePath));
  });

  it("reads a plain or a brotli vocabulary, and names the file that is missing or corrupt", () => {
    const plain = join(dir, "plain.gguf");
    writeTestModel(plain, mini, { vocabPath });
    expect(sha256(plain)).toBe(sha256(a)); // a was written from the compressed asset
    expect(() => writeTestModel(join(dir, "x.gguf"), mini, { vocabPath: join(dir, "missing.gguf") })).toThrow(/test model source missing: .*missing\.gguf/);
    const bad = join(dir, "bad.gguf.br");
    writeFileSync(bad, "not brotli");
    expect(() => writeTestModel(join(dir, "x.gguf"), mini, { vocabPath: bad })).toThrow(/cannot decompress .*bad\.gguf\.br/);
  });

  it("copies every tokenizer key of ggml-vocab-qwen2.gguf and sets the Qwen2.5 chat template", () => {
    const file = readGgufFileSync(a);
    const source = readGgufFileSync(vocabPath);
    expect(source.invalidUtf8Keys).toEqual([]);
    const tokenizerKeys = [...source.metadata.keys()].filter((k) => k.startsWith("tokenizer.ggml."));
    expect(tokenizerKeys).toEqual(expect.arrayContaining(["tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.pre"]));
    for (const key of tokenizerKeys) expectSameValue(file.metadata.get(key), source.metadata.get(key), key);
    expect([...file.metadata.keys()].filter((k) => k.startsWith("tokenizer.ggml."))).toEqual(tokenizerKeys);
    expect(file.metadata.get("tokenizer.chat_template")).toEqual({ type: "string", value: readFileSync(templatePath, "utf8") });
  });

  it("scales weights as documented: norms 1, matrices 1/sqrt(fan_in), output logitScale/sqrt(nEmbd)", () => {
    const file = readGgufFileSync(a);
    expect(tensorValues(a, file, "output_norm.weight", 32)).toEqual(new Array(32).fill(1));
    const std = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + x * x, 0) / xs.length);
    expect(std(tensorValues(a, file, "output.weight", 20000))).toBeCloseTo(TEST_MODEL_PRESETS.tiny.logitScale / Math.sqrt(32), 1);
    expect(std(tensorValues(a, file, "blk.0.ffn_down.weight", 2048))).toBeCloseTo(1 / Math.sqrt(64), 1);
  });
});

describe("float32ToFloat16Bits", () => {
  it("converts normals, subnormals, overflow, infinities and NaN with round-to-nearest-even", () => {
    const src = Float32Array.of(1, -2, 65504, 65520, 1e-8, 2 ** -24, 2 ** -14, 1 + 2 ** -11, 1 + 3 * 2 ** -11, Infinity, -Infinity, NaN, 0.1);
    const out = new Uint16Array(src.length);
    float32ToFloat16Bits(src, out);
    expect([...out].map((x) => x.toString(16))).toEqual(
      // 1+2^-11 is halfway: to even (1.0); 1+3*2^-11 is halfway: to even (1+2^-9)
      ["3c00", "c000", "7bff", "7c00", "0", "1", "400", "3c00", "3c02", "7c00", "fc00", "7e00", "2e66"],
    );
  });
});

describe("ensureTestModel", () => {
  it("writes once into the cache, atomically, for concurrent callers", async () => {
    const cacheDir = join(dir, "cache");
    const paths = await Promise.all([1, 2, 3].map(() => ensureTestModel("tiny", { cacheDir, overrides: mini })));
    expect(new Set(paths).size).toBe(1);
    const path = paths[0] as string;
    expect(path.startsWith(cacheDir)).toBe(true);
    expect(readdirSync(cacheDir)).toEqual([path.slice(cacheDir.length + 1)]); // no temp or lock files left
    const mtime = statSync(path).mtimeMs;
    expect(await ensureTestModel("tiny", { cacheDir, overrides: mini })).toBe(path);
    expect(statSync(path).mtimeMs).toBe(mtime);
    expect(sha256(path)).toBe(sha256(join(dir, "a.gguf")));
    // other parameters, other file
    expect(await ensureTestModel("tiny", { cacheDir, overrides: { ...mini, seed: 9 } })).not.toBe(path);
  });

  it("sizes the presets as documented", () => {
    expect(presetParameters("tiny")).toBeLessThan(25e6);
    expect(presetParameters("small")).toBeGreaterThan(85e6);
    expect(presetParameters("small")).toBeLessThan(115e6);
  });
});
