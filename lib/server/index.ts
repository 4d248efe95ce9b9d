/** `llamapeg/server`: the OpenAI-compatible HTTP server. */
export { startServer, type LlamapegServer } from "./server.js";
export { isLoopback, type ServerOptions } from "./options.js";
export type { CompletionTarget } from "./target.js";
