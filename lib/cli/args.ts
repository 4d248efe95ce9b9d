/** Command-line parsing on node:util's parseArgs, with errors that name the flag. */
import { parseArgs, type ParseArgsConfig } from "node:util";

import { LlamapegError } from "../errors.js";

export type Flags = NonNullable<ParseArgsConfig["options"]>;

export function parseFlags(argv: string[], options: Flags): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (e) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", (e as Error).message);
  }
}

export function intFlag(values: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--${name} must be an integer in [${min}, ${max}] (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function numFlag(values: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--${name} must be a number in [${min}, ${max}] (got ${JSON.stringify(raw)})`);
  }
  return n;
}
