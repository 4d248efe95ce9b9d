// Types of scripts/llama-embedding.mjs for the TypeScript tests.
export function ensureLlamaEmbedding(options?: { log?: (message: string) => void }): Promise<{ llamaEmbedding: string; built: boolean; seconds: number }>;
