/**
 * Every error llamapeg throws on purpose carries a stable `code` (and, where it helps, the place
 * the problem was found), so callers can branch on it without parsing messages.
 */
export type LlamapegErrorCode =
  // native / model
  | "ERR_NATIVE_LOAD"
  | "ERR_MODEL_NOT_FOUND"
  | "ERR_MODEL_NOT_GGUF"
  | "ERR_MODEL_CORRUPT"
  | "ERR_MODEL_UNSUPPORTED"
  | "ERR_MODEL_LOAD"
  | "ERR_CONTEXT_CREATE"
  | "ERR_DISPOSED"
  | "ERR_BUSY"
  | "ERR_DECODE"
  | "ERR_GRAMMAR_INVALID"
  | "ERR_GRAMMAR_DEAD_END"
  | "ERR_CONTEXT_FULL"
  | "ERR_NO_SEQUENCE"
  | "ERR_ABORTED"
  | "ERR_INVALID_ARGUMENT"
  // parsing / grammars / chat
  | "ERR_PEG_INVALID"
  | "ERR_PEG_PARSE"
  | "ERR_SCHEMA_UNSUPPORTED"
  | "ERR_SCHEMA_INVALID"
  | "ERR_TEMPLATE_RENDER"
  | "ERR_TEMPLATE_LIMIT"
  | "ERR_TEMPLATE_ANALYSIS"
  | "ERR_CHAT_PARSE"
  | "ERR_CHAT_DIFF"
  | "ERR_INVALID_REQUEST"
  // remote generation (llama-server)
  | "ERR_REMOTE_UNAVAILABLE"
  | "ERR_REMOTE_REFUSED"
  | "ERR_REMOTE_STREAM"
  | "ERR_REMOTE_TIMEOUT"
  | "ERR_REMOTE_PROTOCOL"
  | "ERR_INTERNAL";

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
}

export function assertNever(value: never, what = "value"): never {
  throw new LlamapegError("ERR_INTERNAL", `unexpected ${what}: ${JSON.stringify(value)}`);
}
