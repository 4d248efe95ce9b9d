/**
 * Every error llamapeg throws on purpose carries a stable `code` (and, where it helps, the place
 * the problem was found), so callers can branch on it without parsing messages. Argument errors
 * keep the JavaScript convention (`instanceof TypeError` / `RangeError`) and carry the code
 * `ERR_INVALID_ARGUMENT` too; they are `instanceof LlamapegError` as well (a class can extend one
 * built-in error only, so LlamapegError's instanceof also answers for them). A broken internal
 * invariant is `ERR_INTERNAL`.
 */
export const ERROR_CODES = [
  // native / model
  "ERR_NATIVE_LOAD",
  "ERR_MODEL_NOT_FOUND",
  "ERR_MODEL_NOT_GGUF",
  "ERR_MODEL_CORRUPT",
  "ERR_MODEL_UNSUPPORTED",
  "ERR_MODEL_LOAD",
  "ERR_CONTEXT_CREATE",
  "ERR_DISPOSED",
  "ERR_BUSY",
  "ERR_DECODE",
  "ERR_GRAMMAR_INVALID",
  "ERR_GRAMMAR_DEAD_END",
  "ERR_CONTEXT_FULL",
  "ERR_NO_SEQUENCE",
  "ERR_ABORTED",
  "ERR_INVALID_ARGUMENT",
  "ERR_STATE_INVALID",
  "ERR_STATE_MISMATCH",
  // parsing / grammars / chat
  "ERR_PEG_INVALID",
  "ERR_PEG_PARSE",
  "ERR_SCHEMA_UNSUPPORTED",
  "ERR_SCHEMA_INVALID",
  "ERR_TEMPLATE_RENDER",
  "ERR_TEMPLATE_LIMIT",
  "ERR_TEMPLATE_ANALYSIS",
  "ERR_CHAT_PARSE",
  "ERR_CHAT_DIFF",
  "ERR_INVALID_REQUEST",
  // remote generation (llama-server)
  "ERR_REMOTE_UNAVAILABLE",
  "ERR_REMOTE_REFUSED",
  "ERR_REMOTE_STREAM",
  "ERR_REMOTE_TIMEOUT",
  "ERR_REMOTE_PROTOCOL",
  "ERR_INTERNAL",
] as const;

export type LlamapegErrorCode = (typeof ERROR_CODES)[number];

export class LlamapegError extends Error {
  readonly code: LlamapegErrorCode;
  /** Where the problem is: a file path, a JSON pointer, a field path, a byte offset... */
  readonly where?: string;

  constructor(code: LlamapegErrorCode, message: string, options?: { where?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "LlamapegError";
    this.code = code;
    if (options?.where !== undefined) this.where = options.where;
  }

  /** `e instanceof LlamapegError` holds for every coded error we throw, the argument errors included. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    return this === LlamapegError && (value instanceof ArgumentTypeError || value instanceof ArgumentRangeError);
  }
}

/** A wrong argument type: a `TypeError` with `code` ERR_INVALID_ARGUMENT. */
export class ArgumentTypeError extends TypeError {
  readonly code = "ERR_INVALID_ARGUMENT" as const;
  readonly where?: string;

  constructor(message: string, where?: string) {
    super(message);
    this.name = "TypeError";
    if (where !== undefined) this.where = where;
  }
}

/** An argument out of range: a `RangeError` with `code` ERR_INVALID_ARGUMENT. */
export class ArgumentRangeError extends RangeError {
  readonly code = "ERR_INVALID_ARGUMENT" as const;
  readonly where?: string;

  constructor(message: string, where?: string) {
    super(message);
    this.name = "RangeError";
    if (where !== undefined) this.where = where;
  }
}

/** A broken internal invariant (a bug): ERR_INTERNAL naming where. */
export function internalError(message: string, where?: string): LlamapegError {
  return new LlamapegError("ERR_INTERNAL", `internal: ${message}`, where === undefined ? undefined : { where });
}

export function assertNever(value: never, what = "value"): never {
  throw internalError(`unexpected ${what}: ${JSON.stringify(value)}`);
}
