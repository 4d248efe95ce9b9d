/**
 * POST /v1/messages: Anthropic's Messages API on the Chat Completions path (same plan, session,
 * sampling and request checks; lib/anthropic/ maps the request and shapes the events). Errors come
 * in Anthropic's body (`{type: "error", error: {type, message}}`) with the same statuses; a stream
 * sends Anthropic's named events and ends with `message_stop`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { MessageEmitter } from "../anthropic/events.js";
import { mapMessagesRequest, MESSAGES_PARAM_NAMES } from "../anthropic/request.js";
import type { AnthropicErrorBody } from "../anthropic/types.js";
import { createChatCompletion, normalizeChatRequest } from "../openai/index.js";
import { onSlot, readJsonRequest, renameParams, type RouteContext } from "./chat-run.js";
import { httpErrorOf } from "./http-error.js";
import { plannedOptions } from "./plan-worker.js";
import { sendJson } from "./respond.js";
import { sendNamedEvents } from "./named-events.js";
import { tapTarget } from "./tap-target.js";

const rename = (e: unknown) => renameParams(e, MESSAGES_PARAM_NAMES);

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "overloaded_error",
};

/** Any error as Anthropic's body, with its status and headers. */
export function anthropicError(error: unknown): { status: number; body: AnthropicErrorBody; headers: Record<string, string> } {
  const { status, body, headers } = httpErrorOf(rename(error));
  const param = body.error.param;
  const message = param !== null && !body.error.message.startsWith(`${param}:`) ? `${param}: ${body.error.message}` : body.error.message;
  return { status, body: { type: "error", error: { type: ERROR_TYPES[status] ?? "api_error", message } }, headers };
}

const decoder = new TextDecoder();

export async function messages(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<number> {
  try {
    return await run(req, res, ctx);
  } catch (e) {
    const { status, body, headers } = anthropicError(e);
    if (res.headersSent) res.destroy();
    else sendJson(res, status, body, headers);
    return status;
  }
}

async function run(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<number> {
  const mapped = mapMessagesRequest(await readJsonRequest(req, ctx));
  mapped.chat.model = ctx.modelId;
  normalizeChatRequest(mapped.chat);

  return onSlot(res, ctx, async (slot, signal) => {
    // The raw output and how the generation ended: which stop sequence cut it, if one did.
    const pieces: Uint8Array[] = [];
    let aborted = false;
    const target = tapTarget(slot, () => ({ onPiece: (item) => pieces.push(item.piece), onEnd: (stats) => (aborted = stats?.stopReason === "abort") }));
    const stream = createChatCompletion(target, { ...mapped.chat, stream: true, signal }, plannedOptions(ctx.planner));
    const chunks = stream[Symbol.asyncIterator]();
    const emitter = new MessageEmitter(ctx.modelId);
    const end = async () => {
      const completion = await stream.completion;
      let stopSequence: string | null = null;
      if (aborted && completion.choices[0].finish_reason === "stop" && mapped.stops.length > 0) {
        const text = decoder.decode(Buffer.concat(pieces));
        let at = Infinity;
        for (const s of mapped.stops) {
          const i = text.indexOf(s);
          if (i >= 0 && i < at) [at, stopSequence] = [i, s];
        }
      }
      return emitter.finish({ completion, stopSequence });
    };
    return sendNamedEvents(res, {
      stream: mapped.stream,
      first: await chunks.next(),
      chunks,
      emitter,
      finish: async () => {
        const { message, events } = await end();
        return { body: message, events };
      },
      // Anthropic's `error` event (its client raises it as an APIError).
      errorEvent: (e) => anthropicError(e).body,
    });
  });
}
