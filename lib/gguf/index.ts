/** A small GGUF reader and writer: header, metadata, tensor infos. No native code. */
export { parseGguf, readGgufFile, readGgufFileSync, type ParseGgufOptions, type ReadGgufOptions } from "./read.js";
export { validateGguf, type ValidateGgufOptions } from "./validate.js";
export { encodeGgufHeader, writeGgufFile, type GgufTensorInput, type GgufWriteInput } from "./write.js";
export { ggufValueToJs, getGgufString, getGgufNumber } from "./values.js";
export {
  GGML_TYPE,
  GGML_TYPES,
  GGUF_VALUE_TYPE,
  ggmlTensorByteLength,
  type GgufArray,
  type GgufFile,
  type GgufTensorInfo,
  type GgufValue,
  type GgufValueType,
} from "./types.js";
