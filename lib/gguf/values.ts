import type { GgufFile, GgufValue } from "./types.js";

/** Plain JS view of a metadata value: numbers, bigints, booleans, strings, arrays (typed arrays kept). */
export function ggufValueToJs(v: GgufValue): unknown {
  if (v.type === "array" && v.itemType === "array") return v.value.map(ggufValueToJs);
  return v.value;
}

/** A string metadata value, or undefined when the key is missing or not a string. */
export function getGgufString(file: GgufFile, key: string): string | undefined {
  const v = file.metadata.get(key);
  return v?.type === "string" ? v.value : undefined;
}

/** A numeric metadata value (64-bit ints converted), or undefined when missing or not a number. */
export function getGgufNumber(file: GgufFile, key: string): number | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v.value === "number") return v.value;
  if (typeof v.value === "bigint") return Number(v.value);
  return undefined;
}
