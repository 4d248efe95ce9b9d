/**
 * Errors as HTTP responses in OpenAI's shape (`{error: {message, type, param, code}}`) with the
 * status OpenAI uses: 400 for a bad request (naming the field in `param`), 401, 404, 405, 413, 429;
 * 500 only for failures of the engine itself, never for what the model wrote.
 */
import { LlamapegError } from "../errors.js";
import { toOpenAIError, type OpenAIErrorBody } from "../openai/index.js";

export class HttpError extends Error {
  readonly status: number;
  readonly body: OpenAIErrorBody;
  readonly headers: Record<string, string>;

  constructor(status: number, type: string, message: string, options: { param?: string | null; code?: string | null; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.body = { error: { message, type, param: options.param ?? null, code: options.code ?? null } };
    this.headers = options.headers ?? {};
  }
}

/** Codes that mean the request asked for something wrong (or too big): 400. */
const REQUEST_CODES = new Set(["ERR_INVALID_REQUEST", "ERR_INVALID_ARGUMENT", "ERR_SCHEMA_INVALID", "ERR_SCHEMA_UNSUPPORTED", "ERR_TEMPLATE_RENDER", "ERR_TEMPLATE_LIMIT", "ERR_CONTEXT_FULL"]);

/** V8's stack overflow: on a server only the request's nesting can cause it (the body is depth-limited, this is the net). */
function isStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /maximum call stack/i.test(e.message);
}

/** Any error as (status, OpenAI body). */
export function httpErrorOf(error: unknown): { status: number; body: OpenAIErrorBody; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, body: error.body, headers: error.headers };
  if (isStackOverflow(error)) {
    return { status: 400, body: { error: { message: "the request is nested too deeply to process", type: "invalid_request_error", param: null, code: "request_too_complex" } }, headers: {} };
  }
  const body = toOpenAIError(error);
  if (error instanceof LlamapegError && REQUEST_CODES.has(error.code)) {
    body.error.type = "invalid_request_error";
    if (error.code === "ERR_CONTEXT_FULL") body.error.code = "context_length_exceeded";
    // a template budget spent on this request's input: too large for this server
    if (error.code === "ERR_TEMPLATE_LIMIT") body.error.code = "request_too_complex";
    return { status: 400, body, headers: {} };
  }
  body.error.type = "server_error";
  return { status: 500, body, headers: {} };
}
