// A GGUF encoder for damaged files: unlike lib/gguf/write.ts it writes whatever it is given
// (any dims, types, offsets, counts, alignment), because the point is files a writer would refuse.
import { GGUF_VALUE_TYPE, type GgufValue } from "../../lib/gguf/index.js";

export interface RawTensor {
  name: string;
  dims: readonly (number | bigint)[];
  type: number;
  /** Relative to the data section; default: packed in order, aligned. */
  offset?: number | bigint;
  data: Uint8Array;
}

export interface RawGguf {
  magic?: number;
  version?: number;
  /** Override the counts written in the header. */
  tensorCount?: bigint;
  kvCount?: bigint;
  metadata: [string, GgufValue][];
  tensors: RawTensor[];
  /** Alignment used to place tensor data (the file's own general.alignment is just a key). */
  alignment?: number;
}

class Sink {
  private parts: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)));
    this.push(b);
  }
  str(s: string | Buffer): void {
    const b = typeof s === "string" ? Buffer.from(s, "utf8") : s;
    this.u64(b.length);
    this.push(b);
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function value(out: Sink, v: GgufValue): void {
  switch (v.type) {
    case "uint8":
      out.push(Buffer.of(v.value & 0xff));
      return;
    case "int8": {
      const b = Buffer.alloc(1);
      b.writeInt8(Math.max(-128, Math.min(127, v.value)));
      out.push(b);
      return;
    }
    case "uint16":
    case "int16": {
      const b = Buffer.alloc(2);
      if (v.type === "uint16") b.writeUInt16LE(v.value & 0xffff);
      else b.writeInt16LE(v.value);
      out.push(b);
      return;
    }
    case "uint32":
      out.u32(v.value);
      return;
    case "int32": {
      const b = Buffer.alloc(4);
      b.writeInt32LE(v.value | 0);
      out.push(b);
      return;
    }
    case "float32": {
      const b = Buffer.alloc(4);
      b.writeFloatLE(v.value);
      out.push(b);
      return;
    }
    case "float64": {
      const b = Buffer.alloc(8);
      b.writeDoubleLE(v.value);
      out.push(b);
      return;
    }
    case "uint64":
    case "int64":
      out.u64(v.value);
      return;
    case "bool":
      out.push(Buffer.of(v.value ? 1 : 0));
      return;
    case "string":
      out.str(v.value);
      return;
    case "array": {
      // lib/gguf writes each item of an array of arrays with its own type tag; a chain of one-item
      // arrays (10,000 deep) is written without recursion
      let cur: GgufValue = v;
      while (cur.type === "array" && cur.itemType === "array" && (cur.value as GgufValue[]).length === 1) {
        out.u32(GGUF_VALUE_TYPE.array);
        out.u64(1);
        out.u32(GGUF_VALUE_TYPE.array);
        cur = (cur.value as GgufValue[])[0]!;
      }
      if (cur !== v) {
        value(out, cur);
        return;
      }
      out.u32(GGUF_VALUE_TYPE[v.itemType]);
      const items = Array.from(v.value as ArrayLike<unknown>);
      out.u64(items.length);
      for (const item of items) {
        if (v.itemType === "array") {
          out.u32(GGUF_VALUE_TYPE.array);
          value(out, item as GgufValue);
        } else value(out, { type: v.itemType, value: item } as GgufValue);
      }
      return;
    }
  }
}

const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

/** Encodes a whole file (header, padding, tensor data). */
export function encodeRawGguf(g: RawGguf): Buffer {
  const alignment = g.alignment ?? 32;
  const out = new Sink();
  out.u32(g.magic ?? 0x46554747);
  out.u32(g.version ?? 3);
  out.u64(g.tensorCount ?? BigInt(g.tensors.length));
  out.u64(g.kvCount ?? BigInt(g.metadata.length));
  for (const [k, v] of g.metadata) {
    out.str(k);
    out.u32(GGUF_VALUE_TYPE[v.type]);
    value(out, v);
  }
  let next = 0;
  const placed: { offset: number; data: Uint8Array }[] = [];
  for (const t of g.tensors) {
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    const offset = t.offset ?? next;
    out.u64(offset);
    if (t.offset === undefined) {
      placed.push({ offset: next, data: t.data });
      next = alignUp(next + t.data.length, alignment);
    }
  }
  const header = out.toBuffer();
  const dataStart = alignUp(header.length, alignment);
  const data = Buffer.alloc(next);
  for (const p of placed) data.set(p.data, p.offset);
  return Buffer.concat([header, Buffer.alloc(dataStart - header.length), data]);
}
