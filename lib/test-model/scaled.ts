/**
 * A copy of a test model with some weight matrices scaled, for the speculative decoding tests and
 * benchmark (docs/speculative.md): with every `attn_output` scaled down, a random-weight model's
 * next token depends mostly (factor 0: only) on the current token, so text it wrote once it writes
 * again from the same token on: the way a real model copies a file from its prompt, which random
 * weights never do. Every matrix keeps its shape and type, so a decode step costs what the
 * original's does.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { LlamapegError } from "../errors.js";
import { GGML_TYPE, parseGguf } from "../gguf/index.js";

function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m === 0 ? s * Infinity : NaN;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function f32ToF16(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const e = ((x >>> 23) & 0xff) - 127 + 15;
  const m = x & 0x7fffff;
  if (e <= 0) {
    if (e < -10) return sign;
    const mm = (m | 0x800000) >>> (1 - e);
    return sign | ((mm + 0x1000) >>> 13);
  }
  if (e >= 31) return sign | 0x7c00;
  return (sign | (e << 10) | (m >>> 13)) + ((m >>> 12) & 1);
}

/** The path of `source` with the tensors whose names match `pattern` multiplied by `factor`
 * (written beside it on first use; F16 and F32 tensors only). */
export function scaledTestModel(source: string, pattern: RegExp, factor: number): string {
  const tag = createHash("sha256").update(`${pattern.source}/${pattern.flags}*${factor}`).digest("hex").slice(0, 8);
  const out = source.replace(/\.gguf$/, "") + `-scaled-${tag}.gguf`;
  if (existsSync(out)) return out;
  const bytes = readFileSync(source);
  const file = parseGguf(bytes);
  let hits = 0;
  for (const t of file.tensors) {
    if (!pattern.test(t.name)) continue;
    if (t.byteLength === undefined || (t.type !== GGML_TYPE.F16 && t.type !== GGML_TYPE.F32)) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `tensor ${t.name} is neither F16 nor F32`, { where: t.name });
    }
    hits++;
    const start = file.dataOffset + t.offset;
    const view = new DataView(bytes.buffer, bytes.byteOffset + start, t.byteLength);
    if (t.type === GGML_TYPE.F32) {
      for (let i = 0; i < t.byteLength; i += 4) view.setFloat32(i, view.getFloat32(i, true) * factor, true);
    } else {
      for (let i = 0; i < t.byteLength; i += 2) view.setUint16(i, f32ToF16(f16ToF32(view.getUint16(i, true)) * factor), true);
    }
  }
  if (hits === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `no tensor of ${source} matches ${pattern}`, { where: "pattern" });
  const tmp = `${out}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, out);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
  return out;
}
