/**
 * Option checks shared by the public classes: they run before any native call and throw
 * TypeError / RangeError naming the option, the way built-in Node APIs do (with the code
 * ERR_INVALID_ARGUMENT).
 */
import { ArgumentRangeError, ArgumentTypeError } from "../errors.js";

export function optionalObject(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ArgumentTypeError(`${name} must be an object`);
  }
  return value as Record<string, unknown>;
}

export function checkKeys(options: Record<string, unknown>, allowed: readonly string[], name: string): void {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new ArgumentTypeError(`${name}: unknown option '${key}' (known: ${allowed.join(", ")})`);
    }
  }
}

export function bool(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new ArgumentTypeError(`${name} must be a boolean`);
  return value;
}

export function int(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value)) throw new ArgumentTypeError(`${name} must be an integer`);
  if (value < min || value > max) throw new ArgumentRangeError(`${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

export function num(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || Number.isNaN(value)) throw new ArgumentTypeError(`${name} must be a number`);
  if (value < min || value > max) throw new ArgumentRangeError(`${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

export function oneOf<T extends string>(value: unknown, name: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new ArgumentTypeError(`${name} must be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}`);
  }
  return value as T;
}

export function str(value: unknown, name: string): string {
  if (typeof value !== "string") throw new ArgumentTypeError(`${name} must be a string`);
  return value;
}

export function stringList(value: unknown, name: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ArgumentTypeError(`${name} must be an array of strings`);
  return value.map((item, i) => {
    if (typeof item !== "string") throw new ArgumentTypeError(`${name}[${i}] must be a string`);
    if (item.length === 0) throw new ArgumentRangeError(`${name}[${i}] must not be empty`);
    return item;
  });
}

/** Token ids as an Int32Array, each checked against the vocabulary size. */
export function tokenList(value: unknown, name: string, vocabSize: number): Int32Array {
  if (value === undefined) return new Int32Array(0);
  if (!(value instanceof Int32Array) && !Array.isArray(value) && !ArrayBuffer.isView(value)) {
    throw new ArgumentTypeError(`${name} must be an array of token ids`);
  }
  const list = value as ArrayLike<unknown>;
  const out = new Int32Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const id = list[i];
    if (typeof id !== "number" || !Number.isInteger(id)) throw new ArgumentTypeError(`${name}[${i}] must be an integer token id`);
    if (id < 0 || id >= vocabSize) {
      throw new ArgumentRangeError(`${name}[${i}] = ${id} is outside the vocabulary (0..${vocabSize - 1})`);
    }
    out[i] = id;
  }
  return out;
}

