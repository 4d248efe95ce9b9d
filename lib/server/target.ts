/** What a request runs on: whatever `createChatCompletion` takes (a Context; a Sequence once contexts have them). */
import type { createChatCompletion } from "../openai/index.js";

export type CompletionTarget = Parameters<typeof createChatCompletion>[0];
