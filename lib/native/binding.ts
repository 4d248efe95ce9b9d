/**
 * The one place that knows the addon's shape. Everything native goes through `binding()`;
 * native errors (plain `Error`s with a `code`) become `LlamapegError`s through `fromNative()`.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread } from "node:worker_threads";

import { LlamapegError, type LlamapegErrorCode } from "../errors.js";

/** A GGUF metadata value as stored in the file: numbers, booleans, strings, or arrays of them. */
export type GgufMetadataValue = string | number | boolean | null | GgufMetadataValue[];

export interface NativeLoadOptions {
  gpuLayers: number;
  useMmap: boolean;
  vocabOnly: boolean;
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
  contextSize: number;
  batchSize: number;
  threads: number;
  /** A uint32; 0xFFFFFFFF asks llama.cpp for a random seed. */
  seed: number;
}

export interface NativeContextInfo {
  contextSize: number;
  batchSize: number;
  threads: number;
}

export interface NativeGrammar {
  gbnf: string;
  root: string;
  lazy: boolean;
  triggerPatterns: string[];
  triggerTokens: Int32Array;
}

export interface NativeGenerateOptions {
  maxTokens: number; // -1: until the context is full
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number; // -1: the context's seed
  repeatPenalty: number;
  stopTokens: Int32Array;
  preservedTokens: Int32Array;
  special: boolean;
  grammar: NativeGrammar | null;
  grammarResample: "fast" | "reference";
  grammarFirst: boolean;
  flushTokens: number;
  flushMs: number;
  windowTokens: number;
}

export type StopReason = "eog" | "length" | "stop" | "abort";

export interface NativeFinal {
  promptTokens: number;
  reusedTokens: number;
  generatedTokens: number;
  promptMs: number;
  generateMs: number;
  sampleMs: number;
  stopReason: StopReason;
  stopToken?: number;
  error?: Error & { code?: string };
}

/** Called on the JS thread with every token produced since the last call; `final` on the last. */
export type NativeBatchCallback = (
  tokens: Int32Array,
  bytes: Uint8Array,
  ends: Uint32Array,
  final: NativeFinal | undefined,
) => void;

export interface NativeGeneration {
  abort(): void;
  /** Tells the producer JS has consumed `n` more tokens (frees room in its window). */
  release(n: number): void;
  ref(): void;
  unref(): void;
}

export interface NativeContext {
  dispose(): void;
  info(): NativeContextInfo;
  tokens(): Int32Array;
  clearCache(): void;
  generate(prompt: Int32Array, options: NativeGenerateOptions, onBatch: NativeBatchCallback): NativeGeneration;
}

export interface NativeModel {
  dispose(): void;
  info(): NativeModelInfo;
  metadata(): Record<string, GgufMetadataValue>;
  chatTemplate(name: string | null): string | null;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  tokenPiece(token: number, special: boolean): Uint8Array;
  detokenize(tokens: Int32Array, special: boolean): string;
  isEog(token: number): boolean;
  isControl(token: number): boolean;
  tokenAttributes(token: number): number;
  createContext(options: NativeContextOptions): NativeContext;
}

export type NativeLogLevel = "debug" | "info" | "warn" | "error";

export interface BindingModule {
  loadModel(path: string, options: NativeLoadOptions, onProgress?: (progress: number) => void): Promise<NativeModel>;
  setLogger(logger: ((level: NativeLogLevel, text: string) => void) | null, level: NativeLogLevel): void;
  systemInfo(): string;
  /** Aborts and joins generation threads: this thread's, or (main thread) the whole process's. */
  stopGenerationsForExit(processWide: boolean): void;
  llamaCppVersion: string;
}

/** The package root, from lib/native/ (sources) and dist/native/ (compiled) alike. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

let cached: BindingModule | undefined;

/**
 * ggml's CPU backend runs each graph on an OpenMP team and meets at a barrier after every node.
 * libgomp's default barrier spins: fine in a process that does nothing else, but in Node any other
 * runnable thread (the event loop, V8's GC helpers, other processes) that takes a core from one
 * compute thread leaves its partner spinning for a whole time slice. On 2 busy cores that cost
 * 100x (3 vs 260 tokens/s on the tiny test model); a sleeping (passive) barrier does not. libgomp
 * reads its settings once, when the addon first loads it, so we set the policy for that moment
 * only, and never override a choice the user made (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
 */
function withOpenMpWaitPolicy<T>(load: () => T): T {
  if (process.env.OMP_WAIT_POLICY !== undefined || process.env.GOMP_SPINCOUNT !== undefined) return load();
  process.env.OMP_WAIT_POLICY = "passive";
  try {
    return load();
  } finally {
    delete process.env.OMP_WAIT_POLICY;
  }
}

/** Loads the addon once: `prebuilds/<platform>-<arch>/`, then `build/Release` (node-gyp-build). */
export function binding(): BindingModule {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const override = process.env.LLAMAPEG_NATIVE_PATH;
  const tried: string[] = [];
  try {
    if (override) {
      tried.push(override);
      cached = withOpenMpWaitPolicy(() => require(override) as BindingModule);
    } else {
      tried.push(
        join(packageRoot, "prebuilds", `${process.platform}-${process.arch}`, "*.node"),
        join(packageRoot, "build", "Release", "llamapeg.node"),
        join(packageRoot, "build", "Debug", "llamapeg.node"),
      );
      const load = require("node-gyp-build") as (dir: string) => unknown;
      cached = withOpenMpWaitPolicy(() => load(packageRoot) as BindingModule);
    }
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    const built = existsSync(join(packageRoot, "build", "Release", "llamapeg.node"));
    throw new LlamapegError(
      "ERR_NATIVE_LOAD",
      `could not load the llamapeg native addon (${reason}). Tried:\n  ${tried.join("\n  ")}\n` +
        (built
          ? "build/Release/llamapeg.node exists but failed to load; rebuild it for this Node version with `npm run build:native`."
          : "Build it with `npm run build:native` (needs cmake >= 3.19 and a C++17 compiler)."),
      { where: packageRoot, cause: error },
    );
  }
  // process.exit() and uncaught exceptions skip environment teardown and run exit() at once; stop
  // the generation threads first, or they would compute while llama.cpp's statics are destroyed.
  const loaded = cached;
  process.once("exit", () => loaded.stopGenerationsForExit(isMainThread));
  return cached;
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
  "ERR_INVALID_ARGUMENT",
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
