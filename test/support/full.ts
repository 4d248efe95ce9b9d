/**
 * The exhaustive test variants: `LLAMAPEG_FULL=1 npx vitest run ...` (or `npm run test:full`).
 * `npm test` runs each property at a size that proves it on a 2-core machine in minutes; the full
 * size (every template x every conversation, fuzz at full length, every vocabulary) stays one
 * flag away. Use `sized(fast, full)` for a count, `FULL` to pick a list.
 */
export const FULL = /^(1|true|yes|on)$/i.test(process.env.LLAMAPEG_FULL ?? "");

/** `full` with LLAMAPEG_FULL=1, else `fast`. */
export function sized<T>(fast: T, full: T): T {
  return FULL ? full : fast;
}

/**
 * The vendored llama.cpp vocabularies a quick run checks (models/ggml-vocab-<name>.gguf): one per
 * tokenizer kind and special-token rule (WPM, SPM with a space prefix, SPM with Phi-3's RSTRIP
 * tokens, GPT-2 BPE, the test model's Qwen2 BPE, DeepSeek's pre-tokenizer). The other 13 (among
 * them the 11-16 MB Command-R and Gemma 4 files, most of the time spent) run with LLAMAPEG_FULL=1.
 */
const QUICK_VOCABS = ["bert-bge", "llama-spm", "phi-3", "gpt-2", "qwen2", "deepseek-coder"];

/** Whether a run checks this vocabulary file (`ggml-vocab-<name>.gguf`). */
export function vocabInRun(file: string): boolean {
  return FULL || QUICK_VOCABS.some((name) => file === `ggml-vocab-${name}.gguf`);
}
