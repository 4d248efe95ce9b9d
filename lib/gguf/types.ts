/**
 * GGUF value and tensor types (GGUF v2/v3, little-endian). Names follow the spec's own value type
 * names in lower case so a metadata dump reads like `gguf-dump`.
 */

/** Metadata value types, with their on-disk ids. */
export const GGUF_VALUE_TYPE = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type GgufValueType = keyof typeof GGUF_VALUE_TYPE;
export type GgufNumberType = "uint8" | "int8" | "uint16" | "int16" | "uint32" | "int32" | "float32" | "float64";
export type GgufBigIntType = "uint64" | "int64";
export type GgufScalarType = GgufNumberType | GgufBigIntType | "bool" | "string";

/** Typed-array views used for numeric arrays (compact: a 151k-entry score array stays one buffer). */
export interface GgufTypedArrays {
  uint8: Uint8Array;
  int8: Int8Array;
  uint16: Uint16Array;
  int16: Int16Array;
  uint32: Uint32Array;
  int32: Int32Array;
  float32: Float32Array;
  float64: Float64Array;
  uint64: BigUint64Array;
  int64: BigInt64Array;
}

/** One metadata value, tagged with its GGUF type so a read-then-write keeps the exact encoding. */
export type GgufValue =
  | { type: GgufNumberType; value: number }
  | { type: GgufBigIntType; value: bigint }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | GgufArray;

export type GgufArray =
  | { [K in keyof GgufTypedArrays]: { type: "array"; itemType: K; value: GgufTypedArrays[K] } }[keyof GgufTypedArrays]
  | { type: "array"; itemType: "bool"; value: boolean[] }
  | { type: "array"; itemType: "string"; value: string[] }
  | { type: "array"; itemType: "array"; value: GgufArray[] };

export const GGUF_VALUE_TYPE_NAMES: readonly GgufValueType[] = (() => {
  const names: GgufValueType[] = [];
  for (const [name, id] of Object.entries(GGUF_VALUE_TYPE)) names[id] = name as GgufValueType;
  return names;
})();

/** Fixed byte size of scalar numeric/bool value types. */
export const GGUF_SCALAR_SIZE: Readonly<Record<Exclude<GgufScalarType, "string">, number>> = {
  uint8: 1,
  int8: 1,
  uint16: 2,
  int16: 2,
  uint32: 4,
  int32: 4,
  float32: 4,
  bool: 1,
  uint64: 8,
  int64: 8,
  float64: 8,
};

/**
 * ggml tensor types that GGUF files use: id -> name, elements per block, bytes per block.
 * Sizes as in ggml's type traits (the reader uses them to check that tensor data fits the file).
 */
export const GGML_TYPES: Readonly<Record<number, { name: string; blockSize: number; typeSize: number }>> = {
  0: { name: "F32", blockSize: 1, typeSize: 4 },
  1: { name: "F16", blockSize: 1, typeSize: 2 },
  2: { name: "Q4_0", blockSize: 32, typeSize: 18 },
  3: { name: "Q4_1", blockSize: 32, typeSize: 20 },
  6: { name: "Q5_0", blockSize: 32, typeSize: 22 },
  7: { name: "Q5_1", blockSize: 32, typeSize: 24 },
  8: { name: "Q8_0", blockSize: 32, typeSize: 34 },
  9: { name: "Q8_1", blockSize: 32, typeSize: 40 },
  10: { name: "Q2_K", blockSize: 256, typeSize: 84 },
  11: { name: "Q3_K", blockSize: 256, typeSize: 110 },
  12: { name: "Q4_K", blockSize: 256, typeSize: 144 },
  13: { name: "Q5_K", blockSize: 256, typeSize: 176 },
  14: { name: "Q6_K", blockSize: 256, typeSize: 210 },
  15: { name: "Q8_K", blockSize: 256, typeSize: 292 },
  16: { name: "IQ2_XXS", blockSize: 256, typeSize: 66 },
  17: { name: "IQ2_XS", blockSize: 256, typeSize: 74 },
  18: { name: "IQ3_XXS", blockSize: 256, typeSize: 98 },
  19: { name: "IQ1_S", blockSize: 256, typeSize: 50 },
  20: { name: "IQ4_NL", blockSize: 32, typeSize: 18 },
  21: { name: "IQ3_S", blockSize: 256, typeSize: 110 },
  22: { name: "IQ2_S", blockSize: 256, typeSize: 82 },
  23: { name: "IQ4_XS", blockSize: 256, typeSize: 136 },
  24: { name: "I8", blockSize: 1, typeSize: 1 },
  25: { name: "I16", blockSize: 1, typeSize: 2 },
  26: { name: "I32", blockSize: 1, typeSize: 4 },
  27: { name: "I64", blockSize: 1, typeSize: 8 },
  28: { name: "F64", blockSize: 1, typeSize: 8 },
  29: { name: "IQ1_M", blockSize: 256, typeSize: 56 },
  30: { name: "BF16", blockSize: 1, typeSize: 2 },
  34: { name: "TQ1_0", blockSize: 256, typeSize: 54 },
  35: { name: "TQ2_0", blockSize: 256, typeSize: 66 },
  39: { name: "MXFP4", blockSize: 32, typeSize: 17 },
  40: { name: "NVFP4", blockSize: 64, typeSize: 36 },
  41: { name: "Q1_0", blockSize: 128, typeSize: 18 },
  42: { name: "Q2_0", blockSize: 64, typeSize: 18 },
};

export const GGML_TYPE = { F32: 0, F16: 1 } as const;

/** One tensor as listed in the header. `dims` is ggml order: ne0 (the contiguous one) first. */
export interface GgufTensorInfo {
  name: string;
  dims: number[];
  /** ggml type id (see {@link GGML_TYPES}). */
  type: number;
  /** Byte offset of the data, relative to {@link GgufFile.dataOffset}. */
  offset: number;
  /** Size of the data in bytes, or undefined when the type is unknown to this reader. */
  byteLength: number | undefined;
}

export interface GgufFile {
  version: number;
  /** Key order is file order. */
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute byte offset where tensor data starts (after the header, aligned). */
  dataOffset: number;
  /** Keys whose string values were not valid UTF-8 and were decoded lossily (U+FFFD). */
  invalidUtf8Keys: string[];
}

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as little-endian u32
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Bytes taken by a tensor of this type and shape, or undefined for an unknown type. */
export function ggmlTensorByteLength(type: number, dims: readonly number[]): number | undefined {
  const traits = GGML_TYPES[type];
  if (traits === undefined) return undefined;
  let elements = 1;
  for (const d of dims) elements *= d;
  return (elements / traits.blockSize) * traits.typeSize;
}
