import { open } from "node:fs/promises";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { isUtf8 } from "node:buffer";
import { LlamapegError } from "../errors.js";
import { validateGguf } from "./validate.js";
import {
  GGML_TYPES,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_SCALAR_SIZE,
  GGUF_VALUE_TYPE_NAMES,
  ggmlTensorByteLength,
  type GgufArray,
  type GgufFile,
  type GgufTensorInfo,
  type GgufTypedArrays,
  type GgufValue,
  type GgufValueType,
} from "./types.js";

// ggml's own limit; a tensor with more dims is not loadable anyway.
const MAX_DIMS = 4;
// Arrays of arrays nest at most this deep (llama.cpp reads none; the spec sets no limit, the JS stack does).
const MAX_ARRAY_DEPTH = 64;
const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Thrown inside the parser when the buffer ends before the file does: the caller reads more. */
class NeedMoreBytes {
  constructor(readonly upTo: number) {}
}

export interface ParseGgufOptions {
  /**
   * Size of the whole file when `bytes` holds only its beginning. Running past `bytes` then asks
   * for more (internal); running past `fileSize` is a truncated file. Default: `bytes.length`.
   */
  fileSize?: number;
  /** Names the source in error messages (a path). */
  source?: string;
}

/**
 * Parses a GGUF header (metadata and tensor infos) from bytes that start at the file's beginning.
 * Tensor data is not read; tensor extents are checked against the file size.
 * Errors: ERR_MODEL_NOT_GGUF (bad magic), ERR_MODEL_UNSUPPORTED (version 1, big-endian),
 * ERR_MODEL_CORRUPT (truncated or inconsistent; `where` carries the byte offset).
 */
export function parseGguf(bytes: Uint8Array, options: ParseGgufOptions = {}): GgufFile {
  const result = parseOrNeedMore(new HeaderParser(bytes, options.fileSize ?? bytes.length, options.source));
  if (result instanceof NeedMoreBytes) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `parseGguf: the header runs past the ${bytes.length} bytes given (needs ${result.upTo})`);
  }
  return result;
}

export interface ReadGgufOptions {
  /**
   * Also check what llama.cpp's loader would abort on (validate.ts): a file that passes can be
   * given to `loadModel` without risking the process. Default false (any GGUF is read).
   */
  validate?: boolean;
  /** With `validate`: the file will be loaded for its tokenizer only. */
  vocabOnly?: boolean;
}

/** Reads a GGUF file's header, reading only as much of the file as the header takes. */
export async function readGgufFile(path: string, options: ReadGgufOptions = {}): Promise<GgufFile> {
  const file = await readHeader(path);
  if (options.validate === true) validateGguf(file, { source: path, vocabOnly: options.vocabOnly === true });
  return file;
}

/** Synchronous {@link readGgufFile}, for scripts and CLI code paths that are synchronous anyway. */
export function readGgufFileSync(path: string, options: ReadGgufOptions = {}): GgufFile {
  const file = readHeaderSync(path);
  if (options.validate === true) validateGguf(file, { source: path, vocabOnly: options.vocabOnly === true });
  return file;
}

async function readHeader(path: string): Promise<GgufFile> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (cause) {
    throw openError(path, cause);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new LlamapegError("ERR_MODEL_LOAD", `${path} is not a file`, { where: path });
    const fileSize = info.size;
    let want = Math.min(fileSize, 1 << 20);
    let parser: HeaderParser | undefined;
    for (;;) {
      const buf = Buffer.allocUnsafe(want);
      const { bytesRead } = await handle.read(buf, 0, want, 0);
      const bytes = buf.subarray(0, bytesRead);
      // A short read means the file shrank since stat(): parse what is there, as a truncated file.
      if (parser === undefined || bytesRead < want) parser = new HeaderParser(bytes, bytesRead < want ? bytesRead : fileSize, path);
      else parser.setBytes(bytes);
      const result = parseOrNeedMore(parser);
      if (!(result instanceof NeedMoreBytes)) return result;
      want = nextReadSize(want, result.upTo, fileSize);
    }
  } finally {
    await handle.close();
  }
}

function readHeaderSync(path: string): GgufFile {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (cause) {
    throw openError(path, cause);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new LlamapegError("ERR_MODEL_LOAD", `${path} is not a file`, { where: path });
    const fileSize = info.size;
    let want = Math.min(fileSize, 1 << 20);
    let parser: HeaderParser | undefined;
    for (;;) {
      const buf = Buffer.allocUnsafe(want);
      const bytesRead = readSync(fd, buf, 0, want, 0);
      const bytes = buf.subarray(0, bytesRead);
      // A short read means the file shrank since stat(): parse what is there, as a truncated file.
      if (parser === undefined || bytesRead < want) parser = new HeaderParser(bytes, bytesRead < want ? bytesRead : fileSize, path);
      else parser.setBytes(bytes);
      const result = parseOrNeedMore(parser);
      if (!(result instanceof NeedMoreBytes)) return result;
      want = nextReadSize(want, result.upTo, fileSize);
    }
  } finally {
    closeSync(fd);
  }
}

// Grow geometrically so a 10 MB tokenizer header costs a handful of reads (parsing resumes, so a
// read re-reads bytes but never re-parses them).
function nextReadSize(current: number, upTo: number, fileSize: number): number {
  return Math.min(fileSize, Math.max(current * 4, upTo + (1 << 20)));
}

function openError(path: string, cause: unknown): LlamapegError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return new LlamapegError("ERR_MODEL_NOT_FOUND", `model file not found: ${path}`, { where: path, cause });
  return new LlamapegError("ERR_MODEL_LOAD", `cannot open model file ${path}: ${String(cause)}`, { where: path, cause });
}

function parseOrNeedMore(parser: HeaderParser): GgufFile | NeedMoreBytes {
  try {
    return parser.parse();
  } catch (error) {
    if (error instanceof NeedMoreBytes) return error;
    throw error;
  }
}

class HeaderParser {
  private pos = 0;
  private view: DataView;
  private buf: Buffer;
  private readonly invalidUtf8Keys = new Set<string>();
  private currentKey = "";
  private countsDone = false;
  private version = 0;
  private tensorCount = 0;
  private kvCount = 0;
  private alignment = GGUF_DEFAULT_ALIGNMENT;
  private readonly metadata = new Map<string, GgufValue>();
  private readonly tensors: GgufTensorInfo[] = [];
  private readonly tensorNames = new Set<string>();

  constructor(
    bytes: Uint8Array,
    private readonly fileSize: number,
    private readonly source: string | undefined,
  ) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Replaces the bytes with a longer prefix of the same file; parsing resumes where it stopped. */
  setBytes(bytes: Uint8Array): void {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /**
   * Parses what the bytes allow. On NeedMoreBytes the position is rolled back to the start of the
   * item being read (metadata pair or tensor info), so a later call continues without re-parsing.
   */
  parse(): GgufFile {
    if (!this.countsDone) this.parseCounts();
    while (this.metadata.size < this.kvCount) this.resumable(() => this.parseKeyValue());
    this.currentKey = "";
    if (this.tensors.length === 0) this.alignment = this.readAlignment();
    while (this.tensors.length < this.tensorCount) this.resumable(() => this.parseTensorInfo());

    const dataOffset = alignUp(this.pos, this.alignment);
    for (const t of this.tensors) {
      if (t.byteLength === undefined) continue;
      const end = dataOffset + t.offset + t.byteLength;
      if (end > this.fileSize) {
        this.corrupt(this.fileSize, `tensor ${t.name}'s data ends at byte ${end} but the file has ${this.fileSize} bytes (truncated)`);
      }
    }
    return {
      version: this.version,
      metadata: this.metadata,
      tensors: this.tensors,
      alignment: this.alignment,
      dataOffset,
      invalidUtf8Keys: [...this.invalidUtf8Keys],
    };
  }

  private resumable(step: () => void): void {
    const start = this.pos;
    try {
      step();
    } catch (error) {
      if (error instanceof NeedMoreBytes) this.pos = start;
      throw error;
    }
  }

  private parseCounts(): void {
    this.pos = 0;
    if (this.buf.length < 4 && this.fileSize >= 4) throw new NeedMoreBytes(4);
    if (this.fileSize < 4 || this.view.getUint32(0, true) !== GGUF_MAGIC) {
      const got = this.buf.subarray(0, 4).toString("latin1");
      throw new LlamapegError("ERR_MODEL_NOT_GGUF", `${this.name()} is not a GGUF file (magic ${JSON.stringify(got)}, expected "GGUF")`, {
        where: this.where(0),
      });
    }
    this.pos = 4;
    const version = this.u32("version");
    if (version === 1) {
      throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `${this.name()}: GGUF version 1 is not supported (use version 2 or 3)`, { where: this.where(4) });
    }
    if (version !== 2 && version !== 3) {
      const hint = (version & 0xffff) === 0 ? " (a big-endian GGUF? only little-endian files are supported)" : "";
      throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `${this.name()}: unsupported GGUF version ${version}${hint}`, { where: this.where(4) });
    }
    this.version = version;
    this.tensorCount = this.count("tensor count", 8 + 4 + 4 + 8);
    this.kvCount = this.count("metadata count", 8 + 4 + 1);
    this.countsDone = true;
  }

  private parseKeyValue(): void {
    const keyAt = this.pos;
    const key = this.string("metadata key");
    if (this.metadata.has(key)) this.corrupt(keyAt, `duplicate metadata key ${JSON.stringify(key)}`);
    this.currentKey = key;
    const typeAt = this.pos;
    const type = this.valueType(this.u32("value type"), typeAt);
    this.metadata.set(key, this.value(type));
  }

  private readAlignment(): number {
    const v = this.metadata.get("general.alignment");
    if (v === undefined) return GGUF_DEFAULT_ALIGNMENT;
    if (v.type !== "uint32" || v.value === 0 || (v.value & (v.value - 1)) !== 0) {
      this.corrupt(0, `general.alignment must be a power-of-two uint32, got ${v.type} ${String(v.value)}`);
    }
    return v.value;
  }

  private parseTensorInfo(): void {
    const at = this.pos;
    const name = this.string("tensor name");
    if (this.tensorNames.has(name)) this.corrupt(at, `duplicate tensor name ${JSON.stringify(name)}`);
    const nDims = this.u32("tensor dims");
    if (nDims > MAX_DIMS) this.corrupt(at, `tensor ${name} has ${nDims} dimensions (max ${MAX_DIMS})`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(this.u64AsNumber("tensor dimension"));
    const typeAt = this.pos;
    const type = this.u32("tensor type");
    const traits = GGML_TYPES[type];
    if (traits !== undefined && dims.length > 0 && (dims[0] as number) % traits.blockSize !== 0) {
      this.corrupt(typeAt, `tensor ${name}: first dimension ${dims[0]} is not a multiple of ${traits.name}'s block size ${traits.blockSize}`);
    }
    const offsetAt = this.pos;
    const offset = this.u64AsNumber("tensor offset");
    if (offset % this.alignment !== 0) this.corrupt(offsetAt, `tensor ${name}: data offset ${offset} is not a multiple of the alignment ${this.alignment}`);
    this.tensorNames.add(name);
    this.tensors.push({ name, dims, type, offset, byteLength: ggmlTensorByteLength(type, dims) });
  }

  private value(type: GgufValueType): GgufValue {
    switch (type) {
      case "uint8":
      case "int8":
      case "uint16":
      case "int16":
      case "uint32":
      case "int32":
      case "float32":
      case "float64": {
        const at = this.take(GGUF_SCALAR_SIZE[type], type);
        return { type, value: readNumber(this.view, type, at) };
      }
      case "uint64":
      case "int64": {
        const at = this.take(8, type);
        return { type, value: type === "uint64" ? this.view.getBigUint64(at, true) : this.view.getBigInt64(at, true) };
      }
      case "bool":
        return { type, value: this.bool() };
      case "string":
        return { type, value: this.string("string value") };
      case "array":
        return this.array();
    }
  }

  private array(depth = 0): GgufArray {
    const typeAt = this.pos;
    if (depth >= MAX_ARRAY_DEPTH) this.corrupt(typeAt, `arrays nest more than ${MAX_ARRAY_DEPTH} deep${this.currentKey ? ` in key ${this.currentKey}` : ""}`);
    const itemType = this.valueType(this.u32("array item type"), typeAt);
    const minItemSize = itemType === "string" ? 8 : itemType === "array" ? 12 : GGUF_SCALAR_SIZE[itemType];
    const count = this.count("array length", minItemSize);
    switch (itemType) {
      case "string": {
        const items = new Array<string>(count);
        for (let i = 0; i < count; i++) items[i] = this.string("array string");
        return { type: "array", itemType, value: items };
      }
      case "bool": {
        const items = new Array<boolean>(count);
        for (let i = 0; i < count; i++) items[i] = this.bool();
        return { type: "array", itemType, value: items };
      }
      case "array": {
        const items = new Array<GgufArray>(count);
        for (let i = 0; i < count; i++) {
          const at = this.pos;
          const inner = this.valueType(this.u32("array item type"), at);
          if (inner !== "array") this.corrupt(at, "nested array item type mismatch");
          items[i] = this.array(depth + 1);
        }
        return { type: "array", itemType, value: items };
      }
      default:
        return { type: "array", itemType, value: this.typedArray(itemType, count) } as GgufArray;
    }
  }

  private typedArray<K extends keyof GgufTypedArrays>(type: K, count: number): GgufTypedArrays[K] {
    const size = GGUF_SCALAR_SIZE[type];
    const at = this.take(size * count, `${type}[${count}]`);
    const ctor = TYPED_ARRAY_CTORS[type] as unknown as new (buffer: ArrayBufferLike) => GgufTypedArrays[K];
    if (LITTLE_ENDIAN_HOST) {
      // slice() copies into a fresh, aligned ArrayBuffer: the result does not pin the read buffer.
      const start = this.buf.byteOffset + at;
      return new ctor(this.buf.buffer.slice(start, start + size * count));
    }
    const out = new (TYPED_ARRAY_CTORS[type] as unknown as new (n: number) => GgufTypedArrays[K])(count);
    for (let i = 0; i < count; i++) {
      (out as unknown as Array<number | bigint>)[i] =
        type === "uint64" ? this.view.getBigUint64(at + i * 8, true) : type === "int64" ? this.view.getBigInt64(at + i * 8, true) : readNumber(this.view, type as never, at + i * size);
    }
    return out;
  }

  private string(what: string): string {
    const len = this.u64AsNumber(what);
    const at = this.take(len, what);
    const s = decodeUtf8(this.buf, at, at + len);
    // Only a lossy decode can produce U+FFFD without the source having it; check those rare cases.
    if (s.includes("\uFFFD") && !isUtf8(this.buf.subarray(at, at + len))) {
      this.invalidUtf8Keys.add(this.currentKey || `(${what})`);
    }
    return s;
  }

  private bool(): boolean {
    const at = this.take(1, "bool");
    // llama.cpp reads a bool as a byte and tests it for non-zero; do the same.
    return this.buf[at] !== 0;
  }

  private valueType(id: number, at: number): GgufValueType {
    const name = GGUF_VALUE_TYPE_NAMES[id];
    if (name === undefined) this.corrupt(at, `unknown metadata value type ${id}${this.currentKey ? ` for key ${this.currentKey}` : ""}`);
    return name;
  }

  private u32(what: string): number {
    const at = this.take(4, what);
    return this.view.getUint32(at, true);
  }

  // Two u32 halves instead of getBigUint64: no BigInt allocation on the 300k-string hot path.
  private u64AsNumber(what: string): number {
    const at = this.take(8, what);
    const lo = this.view.getUint32(at, true);
    const hi = this.view.getUint32(at + 4, true);
    if (hi > 0x1fffff) this.corrupt(at, `${what}: ${this.view.getBigUint64(at, true)} is out of range`);
    return hi * 0x1_0000_0000 + lo;
  }

  /** A u64 count whose items take at least `minItemSize` bytes each: bounded by what the file can hold. */
  private count(what: string, minItemSize: number): number {
    const at = this.pos;
    const n = this.u64AsNumber(what);
    if (n * minItemSize > this.fileSize - this.pos) this.corrupt(at, `${what} ${n} does not fit in the file (${this.fileSize} bytes; truncated or corrupt)`);
    return n;
  }

  /** Advances over `n` bytes and returns where they start. */
  private take(n: number, what: string): number {
    const at = this.pos;
    const end = at + n;
    if (end > this.fileSize) this.corrupt(at, `file ends inside ${what}${this.currentKey ? ` of key ${this.currentKey}` : ""} (needs bytes ${at}..${end}, file has ${this.fileSize}; truncated)`);
    if (end > this.buf.length) throw new NeedMoreBytes(end);
    this.pos = end;
    return at;
  }

  private corrupt(offset: number, message: string): never {
    throw new LlamapegError("ERR_MODEL_CORRUPT", `${this.name()}: ${message} at byte ${offset}`, { where: this.where(offset) });
  }

  private name(): string {
    return this.source ?? "GGUF data";
  }

  private where(offset: number): string {
    return this.source === undefined ? `byte ${offset}` : `${this.source}:byte ${offset}`;
  }
}

const TYPED_ARRAY_CTORS = {
  uint8: Uint8Array,
  int8: Int8Array,
  uint16: Uint16Array,
  int16: Int16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  float32: Float32Array,
  float64: Float64Array,
  uint64: BigUint64Array,
  int64: BigInt64Array,
} as const;

function readNumber(view: DataView, type: "uint8" | "int8" | "uint16" | "int16" | "uint32" | "int32" | "float32" | "float64", at: number): number {
  switch (type) {
    case "uint8":
      return view.getUint8(at);
    case "int8":
      return view.getInt8(at);
    case "uint16":
      return view.getUint16(at, true);
    case "int16":
      return view.getInt16(at, true);
    case "uint32":
      return view.getUint32(at, true);
    case "int32":
      return view.getInt32(at, true);
    case "float32":
      return view.getFloat32(at, true);
    case "float64":
      return view.getFloat64(at, true);
  }
}

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

// ignoreBOM: keep a leading U+FEFF (some vocabularies have it as a token) instead of dropping it.
const utf8Decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const charCodes: number[] = [];

// Most tokenizer strings are short ASCII; building those from char codes skips the per-call
// view allocation and decoder overhead, which dominate when a vocabulary has 150k+ entries.
function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len <= 32) {
    charCodes.length = len;
    let i = 0;
    for (; i < len; i++) {
      const b = bytes[start + i] as number;
      if (b >= 0x80) break;
      charCodes[i] = b;
    }
    if (i === len) return String.fromCharCode.apply(null, charCodes);
  }
  return utf8Decoder.decode(new Uint8Array(bytes.buffer, bytes.byteOffset + start, len));
}
