/** `llamapeg/gguf`: GGUF files without the native addon (metadata, chat templates, writing files). */
export { parseGguf, readGgufFile, readGgufFileSync, writeGgufFile, getGgufString, getGgufNumber, ggufValueToJs } from "../gguf/index.js";
export type { GgufFile, GgufValue, GgufTensorInfo } from "../gguf/index.js";
