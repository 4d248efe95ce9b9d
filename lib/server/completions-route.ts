/**
 * POST /v1/completions: OpenAI's legacy text completion (BFCL-style harnesses and older clients
 * send a raw prompt). The prompt is tokenized as it is, special-token text parsed (it is the
 * caller's own prompt, as llama-server reads it), no chat template and no grammar; sampling fields
 * are checked by the Chat Completions validator under the same names; stop strings cut the text as
 * they do there. Stream: `text_completion` chunks, then `data: [DONE]`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

import { LlamapegError } from "../errors.js";
import { randomId } from "../openai/assemble.js";
import { targetSampling } from "../openai/completion.js";
import { invalidRequest } from "../openai/errors.js";
import { checkFields, honoured, ignored, SAMPLING_EXTENSIONS, unsupported, type FieldRule } from "../openai/field-contract.js";
import { completionTarget, normalizeChatRequest, type ChatCompletionRequest, type TargetRequest } from "../openai/index.js";
import { StopMatcher } from "../openai/stops.js";
import { onSlot, readJsonRequest, type RouteContext } from "./chat-run.js";
import { httpErrorOf } from "./http-error.js";
import { sendJson } from "./respond.js";
import { SseWriter } from "./sse-writer.js";

export const COMPLETIONS_FIELDS: Readonly<Record<string, FieldRule>> = {
  prompt: honoured,
  model: honoured,
  max_tokens: honoured,
  temperature: honoured,
  top_p: honoured,
  stop: honoured,
  stream: honoured,
  stream_options: honoured,
  logit_bias: honoured,
  /** The prompt is prepended to the text. */
  echo: honoured,
  n: unsupported("one choice per request here", (v) => v === 1),
  best_of: unsupported("one candidate per request here", (v) => v === 1),
  logprobs: unsupported("log probabilities are served by /v1/chat/completions", (v) => v === 0),
  suffix: unsupported("fill-in-the-middle needs the model's FIM tokens, not supported"),
  user: ignored("an end-user id for abuse monitoring"),
  ...Object.fromEntries(SAMPLING_EXTENSIONS.filter((k) => k !== "chat_template" && k !== "chat_template_kwargs").map((k) => [k, honoured])),
};

interface TextChoice {
  text: string;
  index: 0;
  logprobs: null;
  finish_reason: "stop" | "length" | null;
}

function textCompletion(meta: { id: string; created: number; model: string }, choice: TextChoice, usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number }) {
  return { id: meta.id, object: "text_completion" as const, created: meta.created, model: meta.model, system_fingerprint: "llamapeg", choices: [choice], ...(usage !== undefined ? { usage } : {}) };
}

/** The request as a TargetRequest (prompt as is, no grammar), checked before a slot is taken. */
function targetRequest(body: Record<string, unknown>): { request: Omit<TargetRequest, "signal">; prompt: string; stops: string[]; stream: boolean; includeUsage: boolean; echo: boolean } {
  checkFields(COMPLETIONS_FIELDS, body, "OpenAI Completions");
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === "string") prompt = prompt[0];
  if (typeof prompt !== "string") invalidRequest("prompt", "expected a string (or an array of one string); token-id prompts and batches are not supported");
  if (body.echo !== undefined && body.echo !== null && typeof body.echo !== "boolean") invalidRequest("echo", "expected a boolean");
  // The sampling and transport fields go through the Chat Completions validator: same names, same ranges.
  const sampling: Record<string, unknown> = { messages: [{ role: "user", content: "-" }] };
  for (const k of ["max_tokens", "temperature", "top_p", "stop", "stream", "stream_options", "logit_bias", ...SAMPLING_EXTENSIONS] as const) if (body[k] !== undefined) sampling[k] = body[k];
  const r = normalizeChatRequest(sampling as unknown as ChatCompletionRequest);
  const request: Omit<TargetRequest, "signal"> = {
    prompt: { text: prompt },
    grammar: null,
    preservedTokens: [],
    // OpenAI's default for this endpoint
    maxTokens: r.maxTokens ?? 16,
    ...targetSampling(r),
  };
  return { request, prompt, stops: r.stop, stream: r.stream, includeUsage: r.includeUsage, echo: body.echo === true };
}

export async function completions(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<number> {
  const c = targetRequest(await readJsonRequest(req, ctx));
  const meta = { id: randomId("cmpl-"), created: Math.floor(Date.now() / 1000), model: ctx.modelId };
  return onSlot(res, ctx, async (slot, signal) => {
    const generation = await completionTarget(slot).generate({ ...c.request, signal });
    const stops = new StopMatcher(c.stops);
    const decoder = new TextDecoder();
    let text = c.echo ? c.prompt : "";
    const sse = c.stream ? new SseWriter(res) : null;
    let finished = false;
    try {
      if (sse !== null) {
        sse.start();
        if (c.echo && c.prompt !== "") await sse.event(textCompletion(meta, { text: c.prompt, index: 0, logprobs: null, finish_reason: null }));
      }
      const emit = async (bytes: Uint8Array, last: boolean): Promise<boolean> => {
        const piece = decoder.decode(bytes, { stream: !last });
        if (piece === "") return true;
        text += piece;
        return sse === null || (await sse.event(textCompletion(meta, { text: piece, index: 0, logprobs: null, finish_reason: null })));
      };
      for await (const item of generation) {
        let open = true;
        for (const p of stops.push(item.piece, item.token)) open &&= await emit(p.bytes, false);
        if (!open || stops.matched !== null) break;
      }
      for (const p of stops.flush()) await emit(p.bytes, false);
      await emit(new Uint8Array(0), true);
      finished = true;
    } finally {
      if (!finished || stops.matched !== null) generation.abort();
    }
    let stats;
    try {
      ({ stats } = await generation.result());
    } catch (e) {
      if (sse === null) throw e;
      if (!sse.closed) {
        await sse.event(httpErrorOf(e).body);
        sse.end();
      }
      return 200;
    }
    if (stats.stopReason === "abort" && stops.matched === null) {
      const reason = signal.reason instanceof Error ? signal.reason.message : "aborted";
      if (sse === null) throw new LlamapegError("ERR_ABORTED", `the completion was aborted: ${reason}`);
      sse?.end();
      return 200;
    }
    const finish = stops.matched === null && (stats.stopReason === "length" || stats.stopReason === "context_full") ? "length" : "stop";
    const usage = { prompt_tokens: stats.promptTokens, completion_tokens: stats.generatedTokens, total_tokens: stats.promptTokens + stats.generatedTokens };
    if (sse === null) {
      sendJson(res, 200, textCompletion(meta, { text, index: 0, logprobs: null, finish_reason: finish }, usage));
      return 200;
    }
    await sse.event(textCompletion(meta, { text: "", index: 0, logprobs: null, finish_reason: finish }));
    if (c.includeUsage) await sse.event({ ...textCompletion(meta, { text: "", index: 0, logprobs: null, finish_reason: null }), choices: [], usage });
    await sse.done();
    return 200;
  });
}
