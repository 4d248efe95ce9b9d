/** Request errors in OpenAI's error shape. */
import { LlamapegError } from "../errors.js";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** Throws ERR_INVALID_REQUEST naming the field (`param`, OpenAI's name for it). */
export function invalidRequest(param: string, message: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", `${param}: ${message}`, { where: param });
}

/**
 * OpenAI's error body for any error: request problems (ERR_INVALID_REQUEST, schema and template
 * errors caused by the request) are `invalid_request_error` with `param`; the rest `server_error`.
 */
export function toOpenAIError(error: unknown): OpenAIErrorBody {
  if (error instanceof LlamapegError) {
    const request = ["ERR_INVALID_REQUEST", "ERR_SCHEMA_INVALID", "ERR_SCHEMA_UNSUPPORTED", "ERR_TEMPLATE_RENDER", "ERR_TEMPLATE_LIMIT", "ERR_INVALID_ARGUMENT"].includes(error.code);
    return { error: { message: error.message, type: request ? "invalid_request_error" : "server_error", param: error.where ?? null, code: error.code } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { error: { message, type: "server_error", param: null, code: null } };
}
