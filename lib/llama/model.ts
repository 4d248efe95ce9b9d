/** `loadModel()` and `Model`: a loaded GGUF, its vocabulary, metadata and contexts. */
import { stat } from "node:fs/promises";
import { resolve } from "node:path";

import { LlamapegError, ArgumentTypeError, ArgumentRangeError } from "../errors.js";
import { readGgufFile } from "../gguf/read.js";
import { binding, callNative, fromNative, type GgufMetadataValue, type NativeModel, type NativeModelInfo } from "../native/binding.js";
import { withRpcServers } from "./rpc.js";
import { devicesFor, parseBackend, type BackendName } from "../native/load.js";
import { Context, type ContextOptions } from "./context.js";
import { EmbeddingContext, type EmbeddingContextOptions } from "./embedding.js";
import { bool, checkKeys, int, optionalObject, str } from "./validate.js";

export interface LoadModelOptions {
  /** Layers to offload to the GPU backend; -1 (default) offloads all. Ignored by CPU builds. */
  gpuLayers?: number;
  /** Map the file instead of reading it (default true). */
  useMmap?: boolean;
  /** Load only the tokenizer (no weights; no contexts). Default false. */
  vocabOnly?: boolean;
  /** Called on the JS thread with load progress in [0, 1]. */
  onProgress?: (progress: number) => void;
  /**
   * ggml rpc-servers ("host:port") whose devices take the offloaded layers (`gpuLayers`), split
   * as llama.cpp's `--rpc` splits them. rpc-server has no authentication: loopback or a private
   * network only (docs/scale-out.md).
   */
  rpcServers?: string[];
  /**
   * Which compute backend holds the model: "cpu", "cuda", "vulkan", "metal", or "auto" (default:
   * the one `systemInfo().backend` names, chosen at load: CUDA, Vulkan, Metal, then CPU). A GPU
   * backend that is not installed or finds no device is an ERR_NATIVE_LOAD naming what was tried.
   */
  backend?: BackendName | "auto";
}

export interface TokenizeOptions {
  /** Add BOS/EOS as the model's tokenizer config says. Default false. */
  addSpecial?: boolean;
  /** Turn special-token text (e.g. `<|im_start|>`) into those tokens. Default false. */
  parseSpecial?: boolean;
}

export interface PieceOptions {
  /** Render control tokens as their text (otherwise they render as nothing). Default false. */
  special?: boolean;
}

// llama_token_attr bits (llama.h).
const TOKEN_ATTR_CONTROL = 1 << 3;
const TOKEN_ATTR_USER_DEFINED = 1 << 4;

const loadKeys = ["gpuLayers", "useMmap", "vocabOnly", "onProgress", "rpcServers", "backend"] as const;

// Below this many UTF-16 units tokenizing takes well under a millisecond: not worth a thread.
const ASYNC_TOKENIZE_CHARS = 4096;

/** Loads a GGUF model off the JS thread. Errors: ERR_MODEL_NOT_FOUND, ERR_MODEL_NOT_GGUF,
 * ERR_MODEL_CORRUPT (truncated/corrupt), ERR_MODEL_UNSUPPORTED (architecture), ERR_MODEL_LOAD. */
export async function loadModel(path: string, options?: LoadModelOptions): Promise<Model> {
  str(path, "path");
  if (path.length === 0) throw new ArgumentTypeError("path must not be empty");
  const o = optionalObject(options, "options");
  checkKeys(o, loadKeys, "loadModel options");
  const gpuLayers = int(o.gpuLayers, "gpuLayers", -1, -1, 100_000);
  const useMmap = bool(o.useMmap, "useMmap", true);
  const vocabOnly = bool(o.vocabOnly, "vocabOnly", false);
  if (o.onProgress !== undefined && typeof o.onProgress !== "function") throw new ArgumentTypeError("onProgress must be a function");
  const onProgress = o.onProgress as ((progress: number) => void) | undefined;
  const backend = parseBackend(o.backend, "backend");
  const full = resolve(path);
  // What would make llama.cpp's loader abort the process is a coded error here (lib/gguf/validate.ts).
  if ((await stat(full).catch(() => null))?.isFile()) await readGgufFile(full, { validate: true, vocabOnly });
  return withRpcServers(o.rpcServers, vocabOnly, async (rpcServers) => {
    let native: NativeModel;
    try {
      const devices = devicesFor(backend);
      native = await binding().loadModel(full, { gpuLayers, useMmap, vocabOnly, devices, ...(rpcServers.length > 0 ? { rpcServers } : {}) }, onProgress);
    } catch (error) {
      throw fromNative(error, full);
    }
    const model = new Model(native, full);
    // tokenizing with addSpecial would GGML_ASSERT on the missing id
    if ((model.addBos && model.bos === null) || (model.addEos && model.eos === null)) {
      model.dispose();
      throw new LlamapegError("ERR_MODEL_CORRUPT", `${full}: the tokenizer adds ${model.addBos && model.bos === null ? "BOS" : "EOS"} but the vocabulary has no such token`, { where: full });
    }
    return model;
  });
}

export class Model {
  /** Absolute path of the GGUF file. */
  readonly path: string;
  readonly vocabSize: number;
  /** Special token ids, or null when the vocabulary has none. */
  readonly bos: number | null;
  readonly eos: number | null;
  readonly eot: number | null;
  /** Whether the tokenizer adds BOS / EOS when `addSpecial` is set. */
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly vocabOnly: boolean;
  readonly trainContextSize: number;
  readonly description: string;
  readonly parameters: number;
  readonly sizeBytes: number;

  #native: NativeModel | null;
  #metadata: Readonly<Record<string, GgufMetadataValue>> | undefined;
  readonly #contexts = new Set<{ dispose(): void }>();

  /** @internal use `loadModel()` */
  constructor(native: NativeModel, path: string) {
    this.#native = native;
    this.path = path;
    const info: NativeModelInfo = native.info();
    const id = (t: number) => (t < 0 ? null : t);
    this.vocabSize = info.vocabSize;
    this.bos = id(info.bos);
    this.eos = id(info.eos);
    this.eot = id(info.eot);
    this.addBos = info.addBos;
    this.addEos = info.addEos;
    this.vocabOnly = info.vocabOnly;
    this.trainContextSize = info.trainContextSize;
    this.description = info.description;
    this.parameters = info.parameters;
    this.sizeBytes = info.sizeBytes;
  }

  get disposed(): boolean {
    return this.#native === null;
  }

  /** Every GGUF key/value of the file (arrays included), read once. */
  get metadata(): Readonly<Record<string, GgufMetadataValue>> {
    if (!this.#metadata) {
      const native = this.#live();
      this.#metadata = Object.freeze(callNative(() => native.metadata(), this.path));
    }
    return this.#metadata;
  }

  /** The chat template stored in the file (`tokenizer.chat_template`, or the named one), or null. */
  chatTemplate(name?: string): string | null {
    if (name !== undefined) str(name, "name");
    const native = this.#live();
    return callNative(() => native.chatTemplate(name ?? null));
  }

  /** True for end-of-generation tokens (EOS, EOT, ...). */
  isEog(token: number): boolean {
    const native = this.#live();
    return callNative(() => native.isEog(this.#token(token)));
  }

  /** True for control tokens (rendered as nothing unless `special` is set). */
  isControl(token: number): boolean {
    const native = this.#live();
    return callNative(() => native.isControl(this.#token(token)));
  }

  /** True for tokens the tokenizer keeps whole: control tokens and user-defined added tokens
   * (e.g. `<tool_call>` in Qwen2.5). */
  isSpecial(token: number): boolean {
    const native = this.#live();
    const attributes = callNative(() => native.tokenAttributes(this.#token(token)));
    return (attributes & (TOKEN_ATTR_CONTROL | TOKEN_ATTR_USER_DEFINED)) !== 0;
  }

  /**
   * `tokenize` without blocking the event loop on a large text: above a few thousand characters
   * the work runs on a native thread (a megabyte costs a few hundred milliseconds).
   */
  async tokenizeAsync(text: string, options?: TokenizeOptions): Promise<Int32Array> {
    str(text, "text");
    const o = optionalObject(options, "options");
    checkKeys(o, ["addSpecial", "parseSpecial"], "tokenize options");
    const addSpecial = bool(o.addSpecial, "addSpecial", false);
    const parseSpecial = bool(o.parseSpecial, "parseSpecial", false);
    const native = this.#live();
    if (text.length <= ASYNC_TOKENIZE_CHARS) return callNative(() => native.tokenize(text, addSpecial, parseSpecial));
    try {
      return await native.tokenizeAsync(text, addSpecial, parseSpecial);
    } catch (error) {
      throw fromNative(error, this.path);
    }
  }

  /** The token's llama_token_attr bits (llama.h: UNKNOWN 1, CONTROL 8, USER_DEFINED 16, LSTRIP 128, RSTRIP 256...). */
  tokenAttributes(token: number): number {
    const native = this.#live();
    return callNative(() => native.tokenAttributes(this.#token(token)));
  }

  tokenize(text: string, options?: TokenizeOptions): Int32Array {
    str(text, "text");
    const o = optionalObject(options, "options");
    checkKeys(o, ["addSpecial", "parseSpecial"], "tokenize options");
    const addSpecial = bool(o.addSpecial, "addSpecial", false);
    const parseSpecial = bool(o.parseSpecial, "parseSpecial", false);
    const native = this.#live();
    const ids = callNative(() => native.tokenize(text, addSpecial, parseSpecial));
    // a vocabulary that does not fit its tokenizer type (an RWKV table of GPT-2 strings) yields -1
    for (const id of ids) {
      if (id < 0) throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `the model's tokenizer cannot tokenize this text (it produced token id ${id})`, { where: this.path });
    }
    return ids;
  }

  /** The bytes of one token. A piece may hold only part of a UTF-8 character. */
  tokenPiece(token: number, options?: PieceOptions): Uint8Array {
    const o = optionalObject(options, "options");
    checkKeys(o, ["special"], "tokenPiece options");
    const special = bool(o.special, "special", false);
    const native = this.#live();
    return callNative(() => native.tokenPiece(this.#token(token), special));
  }

  detokenize(tokens: ArrayLike<number>, options?: PieceOptions): string {
    const o = optionalObject(options, "options");
    checkKeys(o, ["special"], "detokenize options");
    const special = bool(o.special, "special", false);
    const ids = tokens instanceof Int32Array ? tokens : Int32Array.from(tokens);
    const native = this.#live();
    return callNative(() => native.detokenize(ids, special));
  }

  createContext(options?: ContextOptions): Context {
    const native = this.#live();
    const draftOption = (options as { draftModel?: unknown } | undefined)?.draftModel;
    let draft: { model: Model; native: NativeModel } | undefined;
    if (draftOption !== undefined && draftOption !== null) {
      if (!(draftOption instanceof Model)) throw new ArgumentTypeError("draftModel must be a Model (loadModel())");
      draft = { model: draftOption, native: draftOption.#live() };
    }
    // The context is disposed with either model: it holds a context of the draft model too.
    const context: Context = new Context(this, native, options, () => {
      this.#contexts.delete(context);
      if (draft !== undefined) draft.model.#contexts.delete(context);
    }, draft);
    this.#contexts.add(context);
    if (draft !== undefined) draft.model.#contexts.add(context);
    return context;
  }

  /** A context that turns texts into vectors (or, with a reranker, scores): lib/llama/embedding.ts. */
  createEmbeddingContext(options?: EmbeddingContextOptions): EmbeddingContext {
    const native = this.#live();
    const context = new EmbeddingContext(this, native, options, () => this.#contexts.delete(context));
    this.#contexts.add(context);
    return context;
  }

  /** Disposes the model's contexts (ending their generations), then releases the weights before
   * returning (unless a tokenizeAsync still runs; then when it ends). */
  dispose(): void {
    if (!this.#native) return;
    for (const context of [...this.#contexts]) context.dispose();
    this.#native.dispose();
    this.#native = null;
  }

  #live(): NativeModel {
    if (!this.#native) throw new LlamapegError("ERR_DISPOSED", "the model was disposed", { where: this.path });
    return this.#native;
  }

  #token(token: number): number {
    if (typeof token !== "number" || !Number.isInteger(token)) throw new ArgumentTypeError("token must be an integer");
    if (token < 0 || token >= this.vocabSize) {
      throw new ArgumentRangeError(`token ${token} is outside the vocabulary (0..${this.vocabSize - 1})`);
    }
    return token;
  }
}
