import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import {
  GGML_TYPE,
  encodeGgufHeader,
  parseGguf,
  readGgufFile,
  readGgufFileSync,
  writeGgufFile,
  type GgufValue,
} from "../../../lib/gguf/index.js";

const dir = mkdtempSync(join(tmpdir(), "llamapeg-gguf-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// One value of every type, arrays of each item type, and a nested array.
const everyType: [string, GgufValue][] = [
  ["t.u8", { type: "uint8", value: 255 }],
  ["t.i8", { type: "int8", value: -128 }],
  ["t.u16", { type: "uint16", value: 65535 }],
  ["t.i16", { type: "int16", value: -32768 }],
  ["t.u32", { type: "uint32", value: 4294967295 }],
  ["t.i32", { type: "int32", value: -2147483648 }],
  ["t.f32", { type: "float32", value: 1.5 }],
  ["t.f64", { type: "float64", value: Math.PI }],
  ["t.u64", { type: "uint64", value: 18446744073709551615n }],
  ["t.i64", { type: "int64", value: -9223372036854775808n }],
  ["t.bool", { type: "bool", value: true }],
  ["t.str", { type: "string", value: "héllo ☃ 𝄞" }],
  ["t.empty", { type: "string", value: "" }],
  ["a.u8", { type: "array", itemType: "uint8", value: Uint8Array.of(1, 2, 3) }],
  ["a.i32", { type: "array", itemType: "int32", value: Int32Array.of(-1, 0, 7) }],
  ["a.f32", { type: "array", itemType: "float32", value: Float32Array.of(0.25, -2) }],
  ["a.u64", { type: "array", itemType: "uint64", value: BigUint64Array.of(1n, 2n ** 63n) }],
  ["a.bool", { type: "array", itemType: "bool", value: [true, false, true] }],
  ["a.str", { type: "array", itemType: "string", value: ["a", "", "Ġthe", "日本", "\uFEFFbom-first"] }],
  ["a.nested", { type: "array", itemType: "array", value: [{ type: "array", itemType: "int16", value: Int16Array.of(5, -5) }] }],
];

function writeSample(path: string, alignment?: number): void {
  const metadata = new Map<string, GgufValue>(everyType);
  if (alignment !== undefined) metadata.set("general.alignment", { type: "uint32", value: alignment });
  writeGgufFile(path, {
    metadata,
    tensors: [
      { name: "a", dims: [3], type: GGML_TYPE.F32, data: new Uint8Array(Float32Array.of(1, 2, 3).buffer) },
      { name: "b", dims: [4, 2], type: GGML_TYPE.F16, data: [new Uint8Array(8), new Uint8Array(8).fill(1)] },
    ],
  });
}

describe("GGUF round trip", () => {
  it("reads back every value type, tensor infos, offsets and the data section", async () => {
    const path = join(dir, "all.gguf");
    writeSample(path);
    const file = await readGgufFile(path);
    expect(file.version).toBe(3);
    expect([...file.metadata.keys()]).toEqual(everyType.map(([k]) => k));
    for (const [key, value] of everyType) expect(file.metadata.get(key), key).toEqual(value);
    expect(file.alignment).toBe(32);
    expect(file.dataOffset % 32).toBe(0);
    expect(file.tensors).toEqual([
      { name: "a", dims: [3], type: 0, offset: 0, byteLength: 12 },
      { name: "b", dims: [4, 2], type: 1, offset: 32, byteLength: 16 },
    ]);
    const bytes = readFileSync(path);
    const a = new Float32Array(bytes.buffer.slice(bytes.byteOffset + file.dataOffset, bytes.byteOffset + file.dataOffset + 12));
    expect([...a]).toEqual([1, 2, 3]);
    expect([...bytes.subarray(file.dataOffset + 32 + 8, file.dataOffset + 32 + 16)]).toEqual(new Array(8).fill(1));
    expect(readGgufFileSync(path)).toEqual(file);
  });

  it("honours general.alignment for offsets and the data section", () => {
    const path = join(dir, "aligned.gguf");
    writeSample(path, 64);
    const file = readGgufFileSync(path);
    expect(file.alignment).toBe(64);
    expect(file.dataOffset % 64).toBe(0);
    expect(file.tensors[1]?.offset).toBe(64);
  });

  it("re-encodes a parsed header to the same bytes", () => {
    const path = join(dir, "same.gguf");
    writeSample(path);
    const bytes = readFileSync(path);
    const file = parseGguf(bytes);
    const { header } = encodeGgufHeader({ metadata: file.metadata, tensors: file.tensors });
    expect(header.length).toBe(file.dataOffset);
    expect(header.equals(bytes.subarray(0, file.dataOffset))).toBe(true);
  });

  it("reads a header larger than the first read chunk (resumed parsing)", async () => {
    const path = join(dir, "big.gguf");
    const words = Array.from({ length: 200_000 }, (_, i) => `w${i}`);
    writeGgufFile(path, { metadata: [["big", { type: "array", itemType: "string", value: words }]], tensors: [] });
    const value = (await readGgufFile(path)).metadata.get("big");
    expect(value?.type === "array" && value.itemType === "string" ? value.value : []).toEqual(words);
  });

  it("flags strings that are not UTF-8 instead of hiding the loss", () => {
    const bytes = Buffer.from(encodeGgufHeader({ metadata: [["k", { type: "string", value: "ab" }]], tensors: [] }).header);
    bytes[bytes.indexOf("ab", 0, "latin1")] = 0xff;
    const file = parseGguf(bytes);
    expect(file.invalidUtf8Keys).toEqual(["k"]);
    expect(file.metadata.get("k")).toEqual({ type: "string", value: "\uFFFDb" });
  });
});

describe("GGUF errors", () => {
  function errorOf(fn: () => unknown): LlamapegError {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(LlamapegError);
      return error as LlamapegError;
    }
    throw new Error("expected an error");
  }

  it("rejects a file that is not GGUF", () => {
    const path = join(dir, "not.gguf");
    writeFileSync(path, "hello, I am text");
    const e = errorOf(() => readGgufFileSync(path));
    expect(e.code).toBe("ERR_MODEL_NOT_GGUF");
    expect(e.where).toBe(`${path}:byte 0`);
    expect(errorOf(() => parseGguf(new Uint8Array(0))).code).toBe("ERR_MODEL_NOT_GGUF");
  });

  it("reports a missing file and a directory", async () => {
    await expect(readGgufFile(join(dir, "missing.gguf"))).rejects.toMatchObject({ code: "ERR_MODEL_NOT_FOUND" });
    await expect(readGgufFile(dir)).rejects.toMatchObject({ code: "ERR_MODEL_LOAD" });
    expect(errorOf(() => readGgufFileSync(dir)).code).toBe("ERR_MODEL_LOAD");
  });

  it("reports truncation at every cut point with the offset where the file ends", () => {
    const path = join(dir, "cut.gguf");
    writeSample(path);
    const bytes = readFileSync(path);
    const file = parseGguf(bytes);
    // Every prefix shorter than the data's end is corrupt (the header needs it, or tensor data runs past the end).
    const dataEnd = file.dataOffset + 32 + 16; // tensor "b" ends there; only padding follows
    expect(parseGguf(bytes.subarray(0, dataEnd)).tensors).toHaveLength(2);
    for (let cut = 4; cut < dataEnd; cut += cut < file.dataOffset ? 1 : 7) {
      const e = errorOf(() => parseGguf(bytes.subarray(0, cut), { source: "x.gguf" }));
      expect(e.code, `cut at ${cut}`).toBe("ERR_MODEL_CORRUPT");
      const offset = Number(/byte (\d+)$/.exec(e.where ?? "")?.[1]);
      expect(offset, e.message).toBeLessThanOrEqual(cut);
      expect(e.message).toMatch(/truncated/);
    }
  });

  it("rejects version 1, big-endian files, unknown value types and a bad alignment", () => {
    writeSample(join(dir, "v.gguf"));
    const base = readFileSync(join(dir, "v.gguf"));
    const v1 = Buffer.from(base);
    v1.writeUInt32LE(1, 4);
    expect(errorOf(() => parseGguf(v1)).code).toBe("ERR_MODEL_UNSUPPORTED");
    const bigEndian = Buffer.from(base);
    bigEndian.writeUInt32BE(3, 4);
    expect(errorOf(() => parseGguf(bigEndian)).message).toMatch(/big-endian/);

    const badType = Buffer.from(base);
    // first key "t.u8": 24-byte preamble, 8-byte length, 4 bytes of key, then the value type
    badType.writeUInt32LE(99, 24 + 8 + 4);
    const e = errorOf(() => parseGguf(badType));
    expect(e.code).toBe("ERR_MODEL_CORRUPT");
    expect(e.where).toBe("byte 36");

    const { header } = encodeGgufHeader({ metadata: [["general.alignment", { type: "uint32", value: 32 }]], tensors: [] });
    const badAlign = Buffer.from(header);
    badAlign.writeUInt32LE(24, badAlign.indexOf("general.alignment", 0, "latin1") + "general.alignment".length + 4);
    expect(errorOf(() => parseGguf(badAlign)).message).toMatch(/power-of-two/);
  });

  it("rejects duplicate keys when writing", () => {
    expect(() =>
      encodeGgufHeader({
        metadata: [
          ["k", { type: "uint8", value: 1 }],
          ["k", { type: "uint8", value: 2 }],
        ],
        tensors: [],
      }),
    ).toThrow(/duplicate metadata key/);
  });

  it("rejects tensor data of the wrong size when writing", () => {
    expect(() => writeGgufFile(join(dir, "bad.gguf"), { metadata: [], tensors: [{ name: "t", dims: [4], type: GGML_TYPE.F32, data: new Uint8Array(15) }] })).toThrow(
      /expected 16/,
    );
  });
});

describe("GGUF files written by llama.cpp's Python gguf writer", () => {
  const llamaDir = process.env.LLAMA_CPP_DIR ?? fileURLToPath(new URL("../../../vendor/llama.cpp", import.meta.url));
  const modelsDir = join(llamaDir, "models");
  // One of each tokenizer family (BPE, SentencePiece with scores, WordPiece) keeps this quick.
  const vocabs = ["ggml-vocab-qwen2.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-bert-bge.gguf"];

  it("finds the vendored vocabularies", () => {
    const present = readdirSync(modelsDir);
    for (const v of vocabs) expect(present).toContain(v);
  });

  it.each(vocabs)("reads %s: one token type and score per token, re-encodes to the same header bytes", (name) => {
    const path = join(modelsDir, name);
    const bytes = readFileSync(path);
    const file = parseGguf(bytes, { source: path });
    expect(typeof file.metadata.get("general.architecture")?.value).toBe("string");
    const tokens = file.metadata.get("tokenizer.ggml.tokens");
    expect(tokens?.type === "array" && tokens.itemType === "string").toBe(true);
    const n = (tokens?.value as string[]).length;
    const types = file.metadata.get("tokenizer.ggml.token_type");
    if (types !== undefined) expect((types.value as Int32Array).length).toBe(n);
    expect(file.invalidUtf8Keys).toEqual([]);
    const { header } = encodeGgufHeader({ metadata: file.metadata, tensors: file.tensors });
    // Tensor-less files end right after the metadata, without padding up to the (empty) data section.
    const end = file.tensors.length === 0 ? bytes.length : file.dataOffset;
    expect(header.subarray(0, end).equals(bytes.subarray(0, end))).toBe(true);
  });
});
