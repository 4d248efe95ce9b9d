// Types of scripts/llama-tools.mjs for the TypeScript tests and benchmarks.
export interface LlamaTools {
  llamaServer: string;
  rpcServer: string;
  llamaEmbedding: string;
  /** Whether this call built them. */
  built: boolean;
  /** How long the build took (0 when cached). */
  seconds: number;
  key: string;
  dir: string | null;
}
export function cacheRoot(): string;
export function buildFlags(): string[];
export function toolsLocation(): { key: string; commit: string; flags: string[]; source: string; dir: string; llamaServer: string; rpcServer: string; llamaEmbedding: string; manifest: string };
export function ensureLlamaTools(options?: { rebuild?: boolean; standalone?: boolean; log?: (message: string) => void }): Promise<LlamaTools>;
