// Compiled (not run) by test/model/server-endpoint-types.test.ts: llamapeg's Responses and Messages
// shapes against the official `openai` and `@anthropic-ai/sdk` packages' types. Every line must
// type-check, except the ones marked as expected to fail (so the check itself is known to bite).
import type { Message as AnthropicMessage, RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages/messages";
import type { Response as OpenAIResponse, ResponseCreateParams, ResponseStreamEvent as OpenAIResponseStreamEvent } from "openai/resources/responses/responses";

import type { MessageObject, MessageStreamEvent } from "../../lib/anthropic/types.js";
import type { ResponseObject, ResponseStreamEvent } from "../../lib/openai/responses/types.js";

export function responses(r: ResponseObject, e: ResponseStreamEvent): void {
  const theirs: OpenAIResponse = r;
  const event: OpenAIResponseStreamEvent = e;
  void theirs;
  void event;
  // The check bites: a response without output_text is not the package's Response.
  // @ts-expect-error output_text is required by the openai package
  const noText: OpenAIResponse = { ...r, output_text: undefined } as Omit<ResponseObject, "output_text">;
  void noText;
}

export function messages(m: MessageObject, e: MessageStreamEvent): void {
  const theirs: AnthropicMessage = m;
  const event: RawMessageStreamEvent = e;
  void theirs;
  void event;
  // @ts-expect-error stop_sequence is required by the Anthropic SDK
  const noStop: AnthropicMessage = m as Omit<MessageObject, "stop_sequence">;
  void noStop;
}

// The package's request params are plain JSON our mapper reads (a type-level smoke check of the field names).
export const fields: readonly (keyof ResponseCreateParams)[] = ["input", "instructions", "tools", "tool_choice", "max_output_tokens", "previous_response_id", "reasoning", "text", "store"];
