/** Generation on llama-server processes (same plans, same chunks) and ggml RPC endpoint checks. */
export { connectLlamaServer, LlamaServerBackend, type LlamaServerOptions, type ServerStatus } from "./backend.js";
export { RemoteGeneration, type RemoteGenerationStats, type RemoteGenerationResult } from "./generation.js";
export { RemoteError, type PartialGeneration } from "./errors.js";
export type { Strategy } from "./fleet.js";
