/** Command-line parsing on node:util's parseArgs; every problem is a UsageError (exit 2) naming the flag. */
import { parseArgs, type ParseArgsConfig } from "node:util";

import { UsageError } from "./usage-error.js";

export type Flags = NonNullable<ParseArgsConfig["options"]>;
export type FlagValues = Record<string, string | boolean | undefined>;

export function parseFlags(argv: string[], options: Flags, command?: string): { values: FlagValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: values as FlagValues, positionals };
  } catch (e) {
    // parseArgs' messages name the flag ("Unknown option '--foo'"); its error codes are not ours.
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ""), command);
  }
}

export function intFlag(values: FlagValues, name: string, fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw === "" || !Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer in [${min}, ${max}] (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function numFlag(values: FlagValues, name: string, fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw === "" || !Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a number in [${min}, ${max}] (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function stringFlag(values: FlagValues, name: string): string | undefined {
  const raw = values[name];
  return typeof raw === "string" ? raw : undefined;
}

/**
 * `--tool-choice`, with `--calls-only` as its alias for `required` (OpenAI's `required` already
 * means the calls alone, issue 10.2). A named tool stays named (also calls only); `--calls-only`
 * with `auto` or `none` contradicts itself: a usage error.
 */
export function toolChoiceFlag(values: FlagValues, fallback: string, command: string): string {
  const given = stringFlag(values, "tool-choice");
  if (values["calls-only"] !== true) return given ?? fallback;
  if (given === "auto" || given === "none") throw new UsageError(`--calls-only means --tool-choice required; it cannot go with --tool-choice ${given}`, command);
  return given ?? "required";
}
