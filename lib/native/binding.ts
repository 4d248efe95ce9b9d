/**
 * The one place that knows the addon's shape (loading it: load.ts). Everything native goes through `binding()`;
 * native errors (plain `Error`s with a `code`) become `LlamapegError`s through `fromNative()`.
 */
import { LlamapegError, type LlamapegErrorCode } from "../errors.js";
import { loadBinding } from "./load.js";

export { packageRoot } from "./load.js";

/** A GGUF metadata value as stored in the file: numbers, booleans, strings, or arrays of them. */
export type GgufMetadataValue = string | number | boolean | null | GgufMetadataValue[];

export interface NativeLoadOptions {
  gpuLayers: number;
  useMmap: boolean;
  vocabOnly: boolean;
  /** "host:port" of ggml rpc-servers whose devices take the offloaded layers. */
  rpcServers?: string[];
  /** ggml device names to place the model on (lib/native/load.ts devicesFor); omitted: all loaded. */
  devices?: string[];
}

export interface NativeModelInfo {
  vocabSize: number;
  bos: number;
  eos: number;
  eot: number;
  nl: number;
  addBos: boolean;
  addEos: boolean;
  vocabOnly: boolean;
  trainContextSize: number;
  embeddingSize: number;
  layers: number;
  parameters: number;
  sizeBytes: number;
  description: string;
}

export interface NativeContextOptions {
  /** Cells per sequence. */
  contextSize: number;
  batchSize: number;
  sequences: number;
  kvUnified: boolean;
  /** 0: llama.cpp's default (physical cores). */
  threads: number;
  /** 0: the same as `threads`. */
  threadsBatch: number;
  /** A uint32; 0xFFFFFFFF asks llama.cpp for a random seed. */
  seed: number;
  /** Full-size sliding-window cache (llama.cpp's swa_full). */
  swaFull?: boolean;
  /** A model drafting for this one (speculative decoding, `speculative: {type: "draft"}`). */
  draftModel?: NativeModel;
  /** State checkpoints kept per sequence for memories that cannot trim (0: none). */
  checkpoints?: number;
  /** Bytes all checkpoints of the context may take. */
  checkpointBytes?: number;
  checkpointInterval?: number;
}

export interface NativeContextInfo {
  /** Cells one sequence can hold. */
  contextSize: number;
  /** Cells of the whole KV cache (all sequences). */
  cells: number;
  batchSize: number;
  sequences: number;
  kvUnified: boolean;
  /** The cache can move positions (context shift). */
  canShift: boolean;
  /** "trim": prefix reuse trims the cells; "checkpoints": the memory cannot roll back (hybrid,
   * recurrent, SWA without swaFull), reuse restores state checkpoints. */
  memory: "trim" | "checkpoints";
  /** The model's sliding window (0: none). */
  slidingWindow: number;
  swaFull: boolean;
  threads: number;
  threadsBatch: number;
}

export interface NativeGrammar {
  gbnf: string;
  root: string;
  lazy: boolean;
  triggerPatterns: string[];
  triggerTokens: Int32Array;
  /** Tokens the grammar accepts before sampling starts (the generation prompt's prefill). */
  prefillTokens: Int32Array;
}

export interface NativeGenerateOptions {
  maxTokens: number; // -1: until the context is full
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number; // -1: the context's seed
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  penaltyLastN: number;
  logitBiasTokens: Int32Array;
  logitBiasValues: Float32Array;
  logprobs: boolean;
  topLogprobs: number;
  stopTokens: Int32Array;
  preservedTokens: Int32Array;
  special: boolean;
  grammar: NativeGrammar | null;
  grammarResample: "fast" | "reference";
  grammarFirst: boolean;
  /** Forced text decoded in one batch with the token before it (native/forced-tokens.h). */
  fastForward?: boolean;
  /** Speculative decoding (native/speculative.h): prompt lookup, or (`model`) the context's draft model; absent or null: off. */
  speculative?: { draftMax: number; draftMin: number; ngramMin: number; ngramMax: number; model: boolean; pMin: number; textLookup: boolean } | null;
  /** Reasoning budget (native/reasoning-budget.h): token sequences of the markers; absent or null: off. */
  reasoningBudget?: { tokens: number; start: Int32Array[]; end: Int32Array[]; forced: Int32Array; open: boolean } | null;
  /** A full sequence drops old tokens (keeping the first `contextShiftKeep`) instead of stopping. */
  contextShift: boolean;
  contextShiftKeep: number;
  flushTokens: number;
  flushMs: number;
  windowTokens: number;
}

/** "context_full": the sequence ran out of cells (the token that did not fit was emitted). */
export type StopReason = "eog" | "length" | "stop" | "abort" | "context_full";

export interface NativeFinal {
  promptTokens: number;
  reusedTokens: number;
  /** Part of reusedTokens restored from a state checkpoint. */
  checkpointTokens: number;
  /** Part of reusedTokens copied from another sequence's cells. */
  sharedTokens: number;
  generatedTokens: number;
  promptMs: number;
  generateMs: number;
  sampleMs: number;
  stopReason: StopReason;
  stopToken?: number;
  /** Times the sequence was shifted (context shift). */
  shifts: number;
  /** Decode steps of its context that went without its next token. */
  stalledSteps: number;
  /** Decode steps it was in that ran on one thread because other work competed for the cores. */
  contendedSteps: number;
  /** From generate() until the decode loop took it up. */
  queueMs: number;
  /** Of generatedTokens: forced by the grammar (fastForward), and the batches that carried them. */
  forcedTokens?: number;
  forcedRuns?: number;
  /** Speculation: tokens drafted (and decoded for verification), and of those the ones kept. */
  draftTokens?: number;
  draftAcceptedTokens?: number;
  /** Reasoning budget: tokens inside reasoning blocks, and the ones forced to close a block. */
  reasoningTokens?: number;
  reasoningForcedTokens?: number;
  error?: Error & { code?: string };
}

/**
 * Per-token data beyond the token (logprobs, once the sampler provides them): token i's entries
 * are ids/values[ends[i-1] .. ends[i]) (from 0 for i = 0), as (token id, value) pairs.
 */
export interface NativeTokenExtra {
  ids: Int32Array;
  values: Float32Array;
  ends: Uint32Array;
}

/** Called on the JS thread with every token produced since the last call; `final` on the last. */
export type NativeBatchCallback = (
  tokens: Int32Array,
  bytes: Uint8Array,
  ends: Uint32Array,
  final: NativeFinal | undefined,
  extra: NativeTokenExtra | undefined,
  /** Per token: 1 = forced by the grammar (fastForward); undefined when none in this batch. */
  forced?: Uint8Array,
) => void;

export interface NativeGeneration {
  abort(): void;
  /** Tells the producer JS has consumed `n` more tokens (frees room in its window). */
  release(n: number): void;
  ref(): void;
  unref(): void;
}

export interface NativeContext {
  /** Ends its generations and frees the llama context before returning. */
  dispose(): void;
  info(): NativeContextInfo;
  /** A free sequence id, or -1 when all are in use. */
  acquireSequence(): number;
  /** Aborts the sequence's generation, forgets its cache and frees it. */
  releaseSequence(seq: number): void;
  tokens(seq: number): Int32Array;
  clearCache(seq: number): void;
  generate(seq: number, prompt: Int32Array, options: NativeGenerateOptions, onBatch: NativeBatchCallback): NativeGeneration;
  /** Writes the sequence's tokens and state to `path` (off the JS thread). */
  saveState(seq: number, path: string): Promise<{ tokens: number; bytes: number }>;
  /** Replaces the sequence's tokens and state with the file's; on failure it is left empty. */
  loadState(seq: number, path: string): Promise<{ tokens: number; bytes: number }>;
}

export interface NativeModel {
  dispose(): void;
  info(): NativeModelInfo;
  metadata(): Record<string, GgufMetadataValue>;
  chatTemplate(name: string | null): string | null;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  /** The same, on a native thread. */
  tokenizeAsync(text: string, addSpecial: boolean, parseSpecial: boolean): Promise<Int32Array>;
  tokenPiece(token: number, special: boolean): Uint8Array;
  detokenize(tokens: Int32Array, special: boolean): string;
  isEog(token: number): boolean;
  isControl(token: number): boolean;
  tokenAttributes(token: number): number;
  createContext(options: NativeContextOptions): NativeContext;
}

export interface NativeEmbeddingOptions {
  contextSize: number;
  batchSize: number;
  sequences: number;
  threads: number;
  threadsBatch: number;
  /** llama_pooling_type: 1 mean, 2 cls, 3 last, 4 rank. */
  pooling: number;
  /** Pool here and stop each graph after the final norm (EmbeddingContextOptions.graph "short"). */
  shortGraph: boolean;
}

export interface NativeEmbeddingInfo {
  contextSize: number;
  batchSize: number;
  sequences: number;
  dimensions: number;
  pooling: number;
  threads: number;
  threadsBatch: number;
  /** The vocabulary's SEP token (-1: none) and whether the tokenizer adds it. */
  sep: number;
  addSep: boolean;
}

export interface NativeEmbeddingContext {
  /** `lengths` splits `tokens` into inputs; `normalize` is llama.cpp's embd_normalize. */
  embed(tokens: Int32Array, lengths: Uint32Array, normalize: number): Promise<{ data: Float32Array; decodes: number; decodeMs: number; shortDecodes: number }>;
  info(): NativeEmbeddingInfo;
  dispose(): void;
}

export type NativeLogLevel = "debug" | "info" | "warn" | "error";

export interface BindingModule {
  loadModel(path: string, options: NativeLoadOptions, onProgress?: (progress: number) => void): Promise<NativeModel>;
  setLogger(logger: ((level: NativeLogLevel, text: string) => void) | null, level: NativeLogLevel): void;
  systemInfo(): string;
  /** Gives freed heap memory back to the system (glibc's malloc_trim; a no-op elsewhere). */
  returnFreedMemory(): void;
  /**
   * Stops native work (generations, loads) and waits for its threads: this thread's, or (main
   * thread) the whole process's, quick-exiting with `code` when they do not stop in time.
   */
  stopForExit(processWide: boolean, code: number): void;
  llamaCppVersion: string;
  /** native/embedding.cpp */
  NativeEmbeddingContext: new (model: NativeModel, options: NativeEmbeddingOptions) => NativeEmbeddingContext;
}

/** Loads the addon and its compute backends once (lib/native/load.ts decides what and from where). */
export function binding(): BindingModule {
  return loadBinding();
}

const nativeCodes = new Set<string>([
  "ERR_MODEL_NOT_FOUND",
  "ERR_MODEL_NOT_GGUF",
  "ERR_MODEL_CORRUPT",
  "ERR_MODEL_UNSUPPORTED",
  "ERR_MODEL_LOAD",
  "ERR_CONTEXT_CREATE",
  "ERR_DISPOSED",
  "ERR_BUSY",
  "ERR_DECODE",
  "ERR_GRAMMAR_INVALID",
  "ERR_GRAMMAR_DEAD_END",
  "ERR_CONTEXT_FULL",
  "ERR_NO_SEQUENCE",
  "ERR_INVALID_ARGUMENT",
  "ERR_STATE_INVALID",
  "ERR_STATE_MISMATCH",
  "ERR_ABORTED",
  "ERR_INTERNAL",
] satisfies LlamapegErrorCode[]);

/**
 * Turns an error thrown by the addon into a `LlamapegError` with the same code. TypeErrors and
 * RangeErrors (argument checks) pass through; a code-less native error becomes ERR_INTERNAL.
 */
export function fromNative(error: unknown, where?: string): unknown {
  if (error instanceof LlamapegError || error instanceof TypeError || error instanceof RangeError) return error;
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  const known = typeof code === "string" && nativeCodes.has(code) ? (code as LlamapegErrorCode) : "ERR_INTERNAL";
  return new LlamapegError(known, error.message, where === undefined ? { cause: error } : { where, cause: error });
}

/** Runs a synchronous native call, converting its error. */
export function callNative<T>(fn: () => T, where?: string): T {
  try {
    return fn();
  } catch (error) {
    throw fromNative(error, where);
  }
}
