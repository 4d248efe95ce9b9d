/**
 * POST /v1/responses: the OpenAI Responses API on the Chat Completions path (same plan, session,
 * sampling and request checks; lib/openai/responses/ maps the request and shapes the events).
 * `stream: true` sends named SSE events (`event: response.output_text.delta` ...) ending with
 * `response.completed` (or `response.incomplete`), as OpenAI's; otherwise the whole response.
 * Stored responses (store defaults to true) are kept in a bounded in-memory store that
 * `previous_response_id` reads.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { createChatCompletion, normalizeChatRequest, type ChatCompletionChunk } from "../openai/index.js";
import { mapResponsesRequest, outputAsMessages, RESPONSES_PARAM_NAMES, ResponseEmitter, type ResponseObject, type ResponseStore, type StoredMessage } from "../openai/responses/index.js";
import { onSlot, readJsonRequest, renameParams, type RouteContext } from "./chat-run.js";
import { HttpError, httpErrorOf } from "./http-error.js";
import { sendNamedEvents } from "./named-events.js";
import { plannedOptions } from "./plan-worker.js";

export interface ResponsesRouteContext extends RouteContext {
  store: ResponseStore;
}

const rename = (e: unknown) => renameParams(e, RESPONSES_PARAM_NAMES);

export async function responses(req: IncomingMessage, res: ServerResponse, ctx: ResponsesRouteContext): Promise<number> {
  const body = await readJsonRequest(req, ctx);
  let history: StoredMessage[] = [];
  const previous = body.previous_response_id;
  if (previous !== undefined && previous !== null) {
    if (typeof previous !== "string") throw new HttpError(400, "invalid_request_error", "previous_response_id: expected a string", { param: "previous_response_id", code: "ERR_INVALID_REQUEST" });
    const hit = ctx.store.get(previous);
    if (hit === undefined) {
      throw new HttpError(404, "invalid_request_error", `previous_response_id: no stored response ${JSON.stringify(previous)} (it was stored with store: false, or is older than the last ${ctx.store.maxEntries})`, {
        param: "previous_response_id",
        code: "previous_response_not_found",
      });
    }
    history = hit.messages;
  }
  let mapped;
  try {
    mapped = mapResponsesRequest(body, history);
    mapped.chat.model = ctx.modelId;
    // Checked before waiting for a slot: a bad request is a 400 at once.
    normalizeChatRequest(mapped.chat);
  } catch (e) {
    throw rename(e);
  }
  const { chat, echo, turn } = mapped;

  return onSlot(res, ctx, async (slot, signal) => {
    const stream = createChatCompletion(slot, { ...chat, stream: true, signal }, plannedOptions(ctx.planner));
    const chunks = stream[Symbol.asyncIterator]();
    const emitter = new ResponseEmitter(echo, ctx.modelId);
    const keep = (response: ResponseObject) => {
      if (echo.store) ctx.store.set(response.id, { messages: [...history, ...turn, ...outputAsMessages(response.output)] });
    };
    // The first chunk comes once the target has taken the request: what it refuses is still a 400.
    let step: IteratorResult<ChatCompletionChunk>;
    try {
      step = await chunks.next();
    } catch (e) {
      throw rename(e);
    }
    return sendNamedEvents(res, {
      stream: echo.stream,
      first: step,
      chunks,
      emitter,
      finish: async () => {
        const { events, response } = emitter.finish(await stream.completion);
        keep(response);
        return { body: response, events };
      },
      // an `error` event carrying OpenAI's error body (the openai client raises it)
      errorEvent: (e) => ({ type: "error", ...httpErrorOf(rename(e)).body }),
    });
  });
}
