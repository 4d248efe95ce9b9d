// Compiled (not run) by test/model/server-openai-types.test.ts: llamapeg's request, completion and
// chunk types against the official `openai` package's. Every line must type-check, except the one
// marked as expected to fail (so the check itself is known to bite).
import type {
  ChatCompletion as OpenAIChatCompletion,
  ChatCompletionChunk as OpenAIChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessage as OpenAIChatCompletionMessage,
} from "openai/resources/chat/completions";

import type { Context } from "../../lib/llama/index.js";
import { createChatCompletion, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionMessage, type ChatCompletionRequest } from "../../lib/openai/index.js";

declare const context: Context;
declare const params: ChatCompletionCreateParams;
declare const streaming: ChatCompletionCreateParamsStreaming;
declare const nonStreaming: ChatCompletionCreateParamsNonStreaming;

export async function requests(): Promise<void> {
  // A request typed as the openai package's params is accepted as is.
  const asRequest: ChatCompletionRequest = params;
  void asRequest;
  void createChatCompletion(context, params);
  // ...and the overloads pick the right result.
  const whole: OpenAIChatCompletion = await createChatCompletion(context, nonStreaming);
  void whole;
  for await (const chunk of createChatCompletion(context, streaming)) {
    const theirs: OpenAIChatCompletionChunk = chunk;
    void theirs;
  }
}

export function responses(c: ChatCompletion, chunk: ChatCompletionChunk, m: ChatCompletionMessage): void {
  // Ours are assignable to theirs (refusal: null included).
  const completion: OpenAIChatCompletion = c;
  const theirChunk: OpenAIChatCompletionChunk = chunk;
  const message: OpenAIChatCompletionMessage = m;
  void completion;
  void theirChunk;
  void message;
  // The check bites: a message without `refusal` is not an OpenAI message.
  // @ts-expect-error refusal is required by the openai package
  const noRefusal: OpenAIChatCompletionMessage = { role: "assistant", content: "x" } as Omit<ChatCompletionMessage, "refusal">;
  void noRefusal;
}
