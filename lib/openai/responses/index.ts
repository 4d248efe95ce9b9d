/** The OpenAI Responses API on top of Chat Completions: request mapping, events, the response store. */
export { mapResponsesRequest, inputMessages, RESPONSES_FIELDS, RESPONSES_PARAM_NAMES, type MappedResponsesRequest, type ResponsesEcho } from "./request.js";
export { ResponseEmitter, outputAsMessages } from "./events.js";
export { ResponseStore, type StoredResponse, type StoredMessage } from "./store.js";
export type * from "./types.js";
