/**
 * Errors of remote generation. Codes (lib/errors.ts):
 * - ERR_REMOTE_UNAVAILABLE: no connection (refused, unknown host, connect timeout), or every
 *   server of the fleet failed before generating.
 * - ERR_REMOTE_REFUSED: the server answered with an error status (bad request, bad API key,
 *   overloaded); `status` and the server's own message are kept.
 * - ERR_REMOTE_STREAM: the stream broke before its final event (server killed, connection reset).
 * - ERR_REMOTE_TIMEOUT: nothing arrived for `timeoutMs` (headers or between chunks).
 * - ERR_REMOTE_PROTOCOL: the server sent something that is not llama-server's /completion stream.
 */
import { LlamapegError, type LlamapegErrorCode } from "../errors.js";

/** What a generation produced before it failed. */
export interface PartialGeneration {
  /** Token ids as streamed (see RemoteGeneration on characters split over tokens). */
  tokens: number[];
  /** The bytes generated so far, decoded (an incomplete last character shows as U+FFFD). */
  text: string;
}

export class RemoteError extends LlamapegError {
  /** The server's base URL. */
  readonly server: string;
  /** How far the request got: "connect", "headers" or "body". */
  readonly stage: string | undefined;
  /** The HTTP status, when the server answered with an error. */
  readonly status: number | undefined;
  /** Set on errors in mid-stream: what was generated before. */
  partial: PartialGeneration | undefined;

  constructor(
    code: LlamapegErrorCode,
    message: string,
    options: { server: string; stage?: string; status?: number; cause?: unknown; where?: string },
  ) {
    super(code, message, { where: options.where ?? options.server, cause: options.cause });
    this.name = "RemoteError";
    this.server = options.server;
    this.stage = options.stage;
    this.status = options.status;
  }
}
