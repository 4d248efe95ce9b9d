import { closeSync, openSync, writeSync } from "node:fs";
import { LlamapegError } from "../errors.js";
import { alignUp } from "./read.js";
import {
  GGML_TYPES,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_SCALAR_SIZE,
  GGUF_VALUE_TYPE,
  ggmlTensorByteLength,
  type GgufArray,
  type GgufValue,
} from "./types.js";

/** A tensor to write: its shape (ne0 first), ggml type id, and its bytes (one buffer or chunks). */
export interface GgufTensorInput {
  name: string;
  dims: readonly number[];
  type: number;
  data: Uint8Array | Iterable<Uint8Array>;
}

export interface GgufWriteInput {
  /** Written in iteration order. `general.alignment`, when present, sets the data alignment. */
  metadata: ReadonlyMap<string, GgufValue> | Iterable<readonly [string, GgufValue]>;
  tensors: readonly GgufTensorInput[];
}

/**
 * Encodes the header (magic, version 3, metadata, tensor infos, padding up to the data section).
 * Tensor offsets are assigned in order, each aligned.
 */
export function encodeGgufHeader(input: { metadata: GgufWriteInput["metadata"]; tensors: readonly Omit<GgufTensorInput, "data">[] }): {
  header: Buffer;
  alignment: number;
  /** Offsets of each tensor's data relative to the data section, in input order. */
  offsets: number[];
  byteLengths: number[];
} {
  const entries = [...input.metadata];
  const alignmentValue = entries.find(([key]) => key === "general.alignment")?.[1];
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if (alignmentValue !== undefined) {
    if (alignmentValue.type !== "uint32" || alignmentValue.value <= 0 || (alignmentValue.value & (alignmentValue.value - 1)) !== 0) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", "general.alignment must be a power-of-two uint32", { where: "general.alignment" });
    }
    alignment = alignmentValue.value;
  }

  const out = new ByteSink();
  out.u32(GGUF_MAGIC);
  out.u32(3);
  out.u64(input.tensors.length);
  out.u64(entries.length);
  const seen = new Set<string>();
  for (const [key, value] of entries) {
    if (seen.has(key)) throw new LlamapegError("ERR_INVALID_ARGUMENT", `duplicate metadata key ${JSON.stringify(key)}`, { where: key });
    seen.add(key);
    out.string(key);
    out.u32(GGUF_VALUE_TYPE[value.type]);
    writeValue(out, value, key);
  }

  const offsets: number[] = [];
  const byteLengths: number[] = [];
  let next = 0;
  for (const t of input.tensors) {
    const byteLength = ggmlTensorByteLength(t.type, t.dims);
    if (byteLength === undefined) throw new LlamapegError("ERR_INVALID_ARGUMENT", `tensor ${t.name}: unknown ggml type ${t.type}`, { where: t.name });
    const blockSize = (GGML_TYPES[t.type] as { blockSize: number }).blockSize;
    if (t.dims.length === 0 || t.dims.length > 4 || (t.dims[0] as number) % blockSize !== 0) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `tensor ${t.name}: bad dims [${t.dims.join(", ")}]`, { where: t.name });
    }
    out.string(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(next);
    offsets.push(next);
    byteLengths.push(byteLength);
    next = alignUp(next + byteLength, alignment);
  }
  out.pad(alignUp(out.length, alignment) - out.length);
  return { header: out.toBuffer(), alignment, offsets, byteLengths };
}

/** Writes a complete GGUF file. Tensor data may come as chunks so big models never sit in memory whole. */
export function writeGgufFile(path: string, input: GgufWriteInput): void {
  const { header, alignment, byteLengths } = encodeGgufHeader(input);
  const fd = openSync(path, "w");
  try {
    writeAll(fd, header);
    const zeros = new Uint8Array(alignment);
    input.tensors.forEach((t, i) => {
      const expected = byteLengths[i] as number;
      let written = 0;
      const chunks = t.data instanceof Uint8Array ? [t.data] : t.data;
      for (const chunk of chunks) {
        written += chunk.byteLength;
        if (written > expected) break;
        writeAll(fd, chunk);
      }
      if (written !== expected) {
        throw new LlamapegError("ERR_INVALID_ARGUMENT", `tensor ${t.name}: data has ${written > expected ? "more than" : written} bytes, expected ${expected}`, { where: t.name });
      }
      writeAll(fd, zeros.subarray(0, alignUp(expected, alignment) - expected));
    });
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off);
}

function writeValue(out: ByteSink, v: GgufValue, key: string): void {
  switch (v.type) {
    case "uint8":
    case "int8":
    case "uint16":
    case "int16":
    case "uint32":
    case "int32":
    case "float32":
    case "float64":
      out.number(v.type, v.value);
      return;
    case "uint64":
      out.u64(v.value);
      return;
    case "int64":
      out.i64(v.value);
      return;
    case "bool":
      out.bytes(Uint8Array.of(v.value ? 1 : 0));
      return;
    case "string":
      out.string(v.value);
      return;
    case "array":
      writeArray(out, v, key);
      return;
  }
}

function writeArray(out: ByteSink, a: GgufArray, key: string): void {
  out.u32(GGUF_VALUE_TYPE[a.itemType]);
  out.u64(a.value.length);
  switch (a.itemType) {
    case "string":
      for (const s of a.value) out.string(s);
      return;
    case "bool":
      out.bytes(Uint8Array.from(a.value, (b) => (b ? 1 : 0)));
      return;
    case "array":
      for (const inner of a.value) {
        out.u32(GGUF_VALUE_TYPE.array);
        writeArray(out, inner, key);
      }
      return;
    default: {
      const view = a.value;
      if (view.BYTES_PER_ELEMENT !== GGUF_SCALAR_SIZE[a.itemType]) {
        throw new LlamapegError("ERR_INVALID_ARGUMENT", `${key}: array data does not match item type ${a.itemType}`, { where: key });
      }
      // Host order is little-endian on every platform llama.cpp targets; GGUF is little-endian.
      out.bytes(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    }
  }
}

/** Growable little-endian byte buffer for the header. */
class ByteSink {
  private buf = Buffer.allocUnsafe(1 << 16);
  length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
      this.buf.copy(bigger, 0, 0, this.length);
      this.buf = bigger;
    }
    const at = this.length;
    this.length += n;
    return at;
  }

  // reserve() may swap this.buf, so it must run before this.buf is read.
  u32(v: number): void {
    const at = this.reserve(4);
    this.buf.writeUInt32LE(v, at);
  }
  u64(v: number | bigint): void {
    const at = this.reserve(8);
    if (typeof v === "number") {
      // two halves: no BigInt per string length on the 300k-string tokenizer arrays
      this.buf.writeUInt32LE(v % 0x1_0000_0000, at);
      this.buf.writeUInt32LE(Math.floor(v / 0x1_0000_0000), at + 4);
    } else {
      this.buf.writeBigUInt64LE(v, at);
    }
  }
  i64(v: bigint): void {
    const at = this.reserve(8);
    this.buf.writeBigInt64LE(v, at);
  }
  number(type: "uint8" | "int8" | "uint16" | "int16" | "uint32" | "int32" | "float32" | "float64", v: number): void {
    const at = this.reserve(GGUF_SCALAR_SIZE[type]);
    switch (type) {
      case "uint8":
        this.buf.writeUInt8(v, at);
        return;
      case "int8":
        this.buf.writeInt8(v, at);
        return;
      case "uint16":
        this.buf.writeUInt16LE(v, at);
        return;
      case "int16":
        this.buf.writeInt16LE(v, at);
        return;
      case "uint32":
        this.buf.writeUInt32LE(v, at);
        return;
      case "int32":
        this.buf.writeInt32LE(v, at);
        return;
      case "float32":
        this.buf.writeFloatLE(v, at);
        return;
      case "float64":
        this.buf.writeDoubleLE(v, at);
        return;
    }
  }
  string(s: string): void {
    const len = Buffer.byteLength(s, "utf8");
    this.u64(len);
    const at = this.reserve(len);
    this.buf.write(s, at, len, "utf8");
  }
  bytes(b: Uint8Array): void {
    const at = this.reserve(b.byteLength);
    this.buf.set(b, at);
  }
  pad(n: number): void {
    this.buf.fill(0, this.reserve(n), this.length);
  }
  toBuffer(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}
