/** Where llama.cpp's log goes. Quiet by default; one logger per thread (environment). */
import { ArgumentTypeError, ArgumentRangeError } from "../errors.js";
import { binding, type NativeLogLevel } from "../native/binding.js";

export type LogLevel = NativeLogLevel;
export type Logger = (level: LogLevel, text: string) => void;

const levels: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/**
 * Sends llama.cpp's log lines at or above `level` (default "warn") to `logger`, on the JS thread;
 * `null` silences it again. Lines keep llama.cpp's own text, trailing newline included.
 */
export function setLogger(logger: Logger | null, options?: { level?: LogLevel }): void {
  if (logger !== null && typeof logger !== "function") throw new ArgumentTypeError("logger must be a function or null");
  const level = options?.level ?? "warn";
  if (!levels.includes(level)) throw new ArgumentRangeError(`level must be one of ${levels.join(", ")}`);
  binding().setLogger(logger, level);
}
