/**
 * AI SDK call options as an OpenAI chat request for `createChatCompletion`, with a warning for
 * every setting that is not applied. `providerOptions.llamapeg` passes llamapeg's request fields
 * through (e.g. `{ grammar: false }`, `{ chat_template_kwargs: {...} }`), checked like any request.
 */
import type { LanguageModelV4CallOptions, SharedV4Warning } from "@ai-sdk/provider";

import type { ChatCompletionRequest, ToolChoice } from "../openai/index.js";
import { toOpenAIMessages } from "./prompt.js";

export interface MappedCall {
  request: ChatCompletionRequest;
  warnings: SharedV4Warning[];
}

function toolChoice(choice: LanguageModelV4CallOptions["toolChoice"]): ToolChoice | undefined {
  if (choice === undefined) return undefined;
  switch (choice.type) {
    case "auto":
    case "none":
    case "required":
      return choice.type;
    case "tool":
      return { type: "function", function: { name: choice.toolName } };
  }
}

export function mapCallOptions(o: LanguageModelV4CallOptions, modelId: string): MappedCall {
  const warnings: SharedV4Warning[] = [];
  const tools = (o.tools ?? []).flatMap((t) => {
    if (t.type === "function") return [{ type: "function" as const, function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.inputSchema as Record<string, unknown> } }];
    warnings.push({ type: "unsupported", feature: `provider tool ${t.id}`, details: "only function tools run in-process" });
    return [];
  });
  const choice = toolChoice(o.toolChoice);
  // headers: the AI SDK always sends some (user agent); in-process they have no meaning, so no warning.

  let responseFormat: ChatCompletionRequest["response_format"];
  if (o.responseFormat?.type === "json") {
    responseFormat =
      o.responseFormat.schema !== undefined
        ? { type: "json_schema", json_schema: { name: o.responseFormat.name ?? "response", schema: o.responseFormat.schema as Record<string, unknown> } }
        : { type: "json_object" };
  }
  // The AI SDK's reasoning levels are OpenAI's efforts: the thinking switch and the reasoning
  // budget of lib/openai/reasoning.ts ("none" off, "low" 1024 tokens, "medium" and up unbounded).
  const effort = o.reasoning === undefined || o.reasoning === "provider-default" ? undefined : o.reasoning;
  const extra = (o.providerOptions?.llamapeg ?? {}) as Record<string, unknown>;

  const request: ChatCompletionRequest = {
    ...(extra as Partial<ChatCompletionRequest>),
    model: modelId,
    messages: toOpenAIMessages(o.prompt),
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && choice !== undefined ? { tool_choice: choice } : {}),
    ...(responseFormat !== undefined ? { response_format: responseFormat } : {}),
    ...(o.maxOutputTokens !== undefined ? { max_tokens: o.maxOutputTokens } : {}),
    ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o.topP !== undefined ? { top_p: o.topP } : {}),
    ...(o.topK !== undefined ? { top_k: o.topK } : {}),
    // OpenAI's penalties (-2..2), as the sampler takes them
    ...(o.presencePenalty !== undefined ? { presence_penalty: o.presencePenalty } : {}),
    ...(o.frequencyPenalty !== undefined ? { frequency_penalty: o.frequencyPenalty } : {}),
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
    ...(o.stopSequences !== undefined && o.stopSequences.length > 0 ? { stop: o.stopSequences } : {}),
    // providerOptions.llamapeg's own reasoning_effort (or budget, or enable_thinking) wins
    ...(effort !== undefined && extra.reasoning_effort === undefined ? { reasoning_effort: effort } : {}),
    ...(o.abortSignal !== undefined ? { signal: o.abortSignal } : {}),
  };
  return { request, warnings };
}
