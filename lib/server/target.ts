/** What a request runs on: a Context, a Sequence, or any CompletionTarget (e.g. a llama-server backend). */
export type { CompletionTargetLike as CompletionTarget } from "../openai/index.js";
