/**
 * How the compiler reports problems. An invalid schema is always an error; an unsupported
 * keyword is an error by default, or, with `unsupported: "ignore"`, a warning after which the
 * compiler does what llama.cpp's converter does (usually: leave the keyword out).
 */
import { LlamapegError } from "../errors.js";

export interface SchemaWarning {
  readonly code: "ERR_SCHEMA_UNSUPPORTED";
  /** The keyword that was left out (or the construct, e.g. `pattern`). */
  readonly keyword: string;
  /** JSON pointer of the keyword, e.g. `#/properties/tags/uniqueItems`. */
  readonly where: string;
  readonly message: string;
}

export type UnsupportedMode = "error" | "ignore";

export class Reporter {
  readonly warnings: SchemaWarning[] = [];
  private readonly seen = new Set<string>();

  constructor(readonly mode: UnsupportedMode = "error") {}

  unsupported(keyword: string, message: string, where: string): void {
    const text = `unsupported JSON schema construct at ${where}: ${message}`;
    if (this.mode === "error") throw new LlamapegError("ERR_SCHEMA_UNSUPPORTED", text, { where });
    const key = `${where}\u0000${message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.warnings.push({ code: "ERR_SCHEMA_UNSUPPORTED", keyword, where, message: text });
  }

  invalid(message: string, where: string): never {
    throw new LlamapegError("ERR_SCHEMA_INVALID", `invalid JSON schema at ${where}: ${message}`, { where });
  }
}
