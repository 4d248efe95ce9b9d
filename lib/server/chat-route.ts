/**
 * POST /v1/chat/completions. The request is checked before it waits for a slot (a bad request is a
 * 400 even when every slot is busy); on its slot it runs through `createChatCompletion`, and a
 * stream is sent as exactly the chunks that yields, then `data: [DONE]`. The client going away
 * aborts the generation (or takes the request out of the queue) and the slot is free again.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import type { TemplateLimits } from "../jinja/index.js";
import { createChatCompletion, normalizeChatRequest, type ChatCompletionRequest } from "../openai/index.js";
import type { ChatPlanner } from "../openai/plan.js";
import { parseJsonBody, readBody } from "./body.js";
import { plannedOptions } from "./plan-worker.js";
import { HttpError, httpErrorOf } from "./http-error.js";
import { onSlots } from "./chat-run.js";
import { sendJson } from "./respond.js";
import type { SlotPool } from "./slots.js";
import { SseWriter } from "./sse-writer.js";
import type { CompletionTarget } from "./target.js";

/** Render budgets for templates sent by clients (see jinja/limits.ts for the defaults). */
export const REQUEST_TEMPLATE_LIMITS: TemplateLimits = Object.freeze({ maxSteps: 500_000, maxOutputLength: 4 * 1024 * 1024, maxAllocation: 32 * 1024 * 1024 });

export interface ChatRouteContext {
  pool: SlotPool<CompletionTarget>;
  bodyLimit: number;
  modelId: string;
  /** Aborted when the server closes. */
  shutdown: AbortSignal;
  /** `chat_template` from clients (off by default: a template is code). */
  allowRequestTemplates: boolean;
  /** Builds chat plans off the event loop (plan-worker.ts). */
  planner?: ChatPlanner;
}

export async function chatCompletions(req: IncomingMessage, res: ServerResponse, ctx: ChatRouteContext): Promise<number> {
  const body = await parseJsonBody(await readBody(req, ctx.bodyLimit));
  // `signal` is the in-process API's; over HTTP the connection is the signal.
  if (Object.hasOwn(body, "signal")) delete body.signal;
  if (!ctx.allowRequestTemplates && body.chat_template !== undefined && body.chat_template !== null) {
    throw new HttpError(400, "invalid_request_error", "chat_template: templates from requests are off on this server (start it with --allow-request-templates)", { param: "chat_template", code: "chat_template_disabled" });
  }
  const request = { ...body, model: ctx.modelId } as unknown as ChatCompletionRequest;
  const { n, chatTemplate } = normalizeChatRequest(request);
  // A client's template gets a tenth of the default step budget: it runs on the event loop, and
  // /health must not wait a quarter of a second behind each one.
  const options = plannedOptions(ctx.planner, chatTemplate !== undefined ? { templateLimits: REQUEST_TEMPLATE_LIMITS } : {});
  if (n > ctx.pool.size) {
    throw new HttpError(400, "invalid_request_error", `n: n=${n} needs ${n} free sequences; this server has --parallel ${ctx.pool.size}`, { param: "n", code: "ERR_INVALID_REQUEST" });
  }

  return onSlots(res, ctx, n, async (slots, signal) => {
    // n > 1: choice i runs on the i-th slot
    const slot = n === 1 ? slots[0]! : slots;
    if (request.stream !== true) {
      const completion = await createChatCompletion(slot, { ...request, stream: false, signal }, options);
      sendJson(res, 200, completion);
      return 200;
    }
    const chunks = createChatCompletion(slot, { ...request, stream: true, signal }, options)[Symbol.asyncIterator]();
    // The first chunk comes once the target has taken the request, so what the target refuses (a
    // logit_bias id outside its vocabulary, logprobs on llama-server) is still a 400, before the headers.
    let step = await chunks.next();
    const sse = new SseWriter(res);
    sse.start();
    try {
      for (; !step.done; step = await chunks.next()) {
        // Leaving the loop closes the stream, which stops the generation before the slot is freed.
        if (!(await sse.event(step.value))) {
          await chunks.return?.();
          break;
        }
      }
      await sse.done();
    } catch (e) {
      // Headers are out: the error goes as an SSE event in OpenAI's error shape, without [DONE].
      if (!sse.closed) {
        await sse.event(httpErrorOf(e).body);
        res.end();
      }
    }
    return 200;
  });
}
