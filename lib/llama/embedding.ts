/**
 * `EmbeddingContext`: a llama context with embeddings on, turning texts (or token lists) into one
 * pooled vector each, several inputs per decode, off the JS thread (native/embedding.cpp). With a
 * reranker (pooling "rank"), `rank(query, documents)` scores each document. Mirrors llama.cpp's
 * examples/embedding (tokenizing with special tokens, common_embd_normalize) and tools/server's
 * format_prompt_rerank / send_rerank.
 */
import { ArgumentRangeError, ArgumentTypeError, LlamapegError } from "../errors.js";
import { binding, callNative, fromNative, type NativeEmbeddingContext, type NativeModel } from "../native/binding.js";
import type { Model } from "./model.js";
import { checkKeys, int, oneOf, optionalObject, str, tokenList } from "./validate.js";

/** llama.cpp's pooling types that give one vector (or score) per input. */
export type PoolingType = "mean" | "cls" | "last" | "rank";

/**
 * How vectors are scaled (llama.cpp's `--embd-normalize`): "euclidean" (unit length, the
 * default), "taxicab" (sum of |x| = 1), "max-abs" (largest |x| = 32760, an int16 range), "none",
 * or a p-norm given as an integer p >= 3.
 */
export type EmbeddingNormalization = "euclidean" | "taxicab" | "max-abs" | "none" | number;

export interface EmbeddingContextOptions {
  /**
   * "model" (default): the model's own (`<arch>.pooling_type` in the GGUF), or "mean" when it
   * declares none (decoder models; llama.cpp would give per-token vectors, which `embed()` does
   * not offer, as llama-server's OpenAI endpoint refuses them). "rank" only for models that
   * declare it (rerankers with a classifier head).
   */
  pooling?: PoolingType | "model";
  /** Default "euclidean", as llama.cpp. Ignored by rank pooling (scores are returned raw). */
  normalize?: EmbeddingNormalization;
  /** Most tokens of one input; a longer one is ERR_CONTEXT_FULL. Default min(512, training context). */
  contextSize?: number;
  /** Most tokens of one decode (several inputs share it); at least `contextSize`. Default `contextSize`. */
  batchSize?: number;
  /** Most inputs of one decode (at most `batchSize`). Default 64 (llama.cpp allows up to 256). */
  sequences?: number;
  /** Compute threads. Default: the number of physical cores, as llama.cpp. */
  threads?: number;
  /** Compute threads for batches. Default: `threads`. */
  threadsBatch?: number;
  /**
   * "short" (default): mean, CLS and last pooling are done here from the model's final norm, and
   * each decode after the first stops there: llama.cpp computes the vocabulary projection for
   * every token of an embedding batch, which embeddings never read (on a decoder model most of
   * the work). The first decode runs the whole graph and checks that the norm's rows are the
   * vectors llama.cpp hands out; where they are not (a model with dense layers after the norm),
   * the context falls back to "reference". "reference": llama.cpp's whole graph, its pooling
   * included, as `llama-embedding` runs it. Rank pooling always runs the whole graph.
   */
  graph?: "short" | "reference";
}

/** One input: a text (tokenized with the model's special tokens, as llama.cpp) or token ids. */
export type EmbeddingInput = string | ArrayLike<number>;

export interface EmbeddingResult {
  embeddings: Float32Array[];
  /** Tokens of each input, as decoded. */
  tokens: number[];
  /** llama_decode calls it took. */
  decodes: number;
  /** Milliseconds inside llama_decode (llama.cpp's "prompt eval time"). */
  decodeMs: number;
  /** Decodes that stopped after the model's final norm: the vocabulary projection, which
   * llama.cpp computes for every token of an embedding batch and embeddings do not use, was left
   * out (docs/contexts.md, "Embedding contexts"). */
  shortDecodes: number;
}

export interface RankResult {
  /** One relevance score per document, in the documents' order (the classifier's first output). */
  scores: number[];
  tokens: number[];
  decodes: number;
  decodeMs: number;
}

const POOLING: Record<PoolingType, number> = { mean: 1, cls: 2, last: 3, rank: 4 };
const POOLING_NAMES = ["none", "mean", "cls", "last", "rank"] as const;
const NORMALIZE: Record<string, number> = { none: -1, "max-abs": 0, taxicab: 1, euclidean: 2 };
const MAX_SEQUENCES = 256; // llama.cpp's LLAMA_MAX_SEQ
const keys = ["pooling", "normalize", "contextSize", "batchSize", "sequences", "threads", "threadsBatch", "graph"] as const;

/** The pooling the GGUF declares (`<arch>.pooling_type`), or null when none. */
export function modelPooling(model: Model): PoolingType | null {
  const arch = model.metadata["general.architecture"];
  const value = typeof arch === "string" ? model.metadata[`${arch}.pooling_type`] : undefined;
  if (typeof value !== "number" || value < 1 || value >= POOLING_NAMES.length) return null;
  return POOLING_NAMES[value] as PoolingType;
}

function parseNormalize(value: unknown): number {
  if (value === undefined) return 2;
  if (typeof value === "string" && value in NORMALIZE) return NORMALIZE[value]!;
  if (typeof value === "number" && Number.isInteger(value) && value >= 3 && value <= 64) return value;
  throw new ArgumentTypeError(`normalize must be "euclidean", "taxicab", "max-abs", "none" or an integer p-norm 3..64 (got ${JSON.stringify(value)})`, "normalize");
}

export class EmbeddingContext {
  readonly model: Model;
  readonly pooling: PoolingType;
  /** Floats per vector (the model's output width; for rank pooling, the classifier's outputs). */
  readonly dimensions: number;
  readonly contextSize: number;
  readonly batchSize: number;
  readonly sequences: number;
  readonly threads: number;
  readonly threadsBatch: number;
  readonly normalize: EmbeddingNormalization;

  #native: NativeEmbeddingContext | null;
  readonly #norm: number;
  readonly #sep: number | null;
  readonly #addSep: boolean;
  readonly #onDispose: () => void;

  /** @internal use `model.createEmbeddingContext()` */
  constructor(model: Model, nativeModel: NativeModel, options: EmbeddingContextOptions | undefined, onDispose: () => void) {
    const o = optionalObject(options, "options");
    checkKeys(o, keys, "createEmbeddingContext options");
    if (model.vocabOnly) {
      throw new LlamapegError("ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run", { where: model.path });
    }
    const declared = modelPooling(model);
    const asked = o.pooling ?? "model";
    if (typeof asked !== "string" || !(asked === "model" || asked in POOLING)) {
      throw new ArgumentTypeError(`pooling must be "model", "mean", "cls", "last" or "rank" (got ${JSON.stringify(asked)})`, "pooling");
    }
    const pooling: PoolingType = asked === "model" ? (declared ?? "mean") : (asked as PoolingType);
    // Without a classifier head llama.cpp's rank pooling returns a meaningless first activation.
    if (pooling === "rank" && declared !== "rank") {
      throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `pooling "rank" needs a reranker model (one that declares rank pooling and a classifier head); ${model.path} declares ${declared ?? "none"}`, {
        where: "pooling",
      });
    }
    this.#norm = parseNormalize(o.normalize);
    const train = model.trainContextSize > 0 ? model.trainContextSize : 512;
    const contextSize = int(o.contextSize, "contextSize", Math.min(512, train), 1, 1 << 20);
    const batchSize = int(o.batchSize, "batchSize", contextSize, 1, 1 << 20);
    if (batchSize < contextSize) throw new ArgumentRangeError(`batchSize (${batchSize}) must be at least contextSize (${contextSize})`, "batchSize");
    const sequences = int(o.sequences, "sequences", 64, 1, MAX_SEQUENCES);
    const threads = int(o.threads, "threads", 0, 1, 1024);
    const threadsBatch = int(o.threadsBatch, "threadsBatch", 0, 1, 1024);
    const graph = oneOf(o.graph, "graph", ["short", "reference"] as const, "short");
    const Ctor = binding().NativeEmbeddingContext;
    this.#native = callNative(() => new Ctor(nativeModel, { contextSize, batchSize, sequences, threads, threadsBatch, pooling: POOLING[pooling], shortGraph: graph === "short" }), model.path);
    const info = this.#native.info();
    this.model = model;
    this.pooling = POOLING_NAMES[info.pooling] as PoolingType;
    this.dimensions = info.dimensions;
    this.contextSize = info.contextSize;
    this.batchSize = info.batchSize;
    this.sequences = info.sequences;
    this.threads = info.threads;
    this.threadsBatch = info.threadsBatch;
    this.#sep = info.sep < 0 ? null : info.sep;
    this.#addSep = info.addSep;
    this.normalize = (o.normalize as EmbeddingNormalization | undefined) ?? "euclidean";
    this.#onDispose = onDispose;
  }

  get disposed(): boolean {
    return this.#native === null;
  }

  /** One vector per input, in order. Empty inputs and inputs over `contextSize` tokens are
   * refused (ERR_INVALID_ARGUMENT / ERR_CONTEXT_FULL) before anything is decoded. */
  async embed(inputs: readonly EmbeddingInput[]): Promise<Float32Array[]> {
    return (await this.embedWithUsage(inputs)).embeddings;
  }

  /** `embed`, with the token count of each input. */
  async embedWithUsage(inputs: readonly EmbeddingInput[]): Promise<EmbeddingResult> {
    if (this.pooling === "rank") {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", "this context ranks (pooling \"rank\"): use rank(query, documents), or create it with another pooling", { where: "pooling" });
    }
    if (!Array.isArray(inputs)) throw new ArgumentTypeError("inputs must be an array of strings or token arrays", "inputs");
    const lists = inputs.map((input, i) => this.#tokens(input, `inputs[${i}]`));
    const { data, decodes, decodeMs, shortDecodes } = await this.#run(lists, "inputs");
    const d = this.dimensions;
    return { embeddings: lists.map((_, i) => data.slice(i * d, (i + 1) * d)), tokens: lists.map((l) => l.length), decodes, decodeMs, shortDecodes };
  }

  /**
   * Relevance of each document to the query (reranker models, pooling "rank"): the prompt is the
   * model's `rerank` template with {query} and {document} filled in, or else BOS query EOS SEP
   * document EOS as the tokenizer adds them (llama.cpp's format_prompt_rerank).
   */
  async rank(query: string, documents: readonly string[]): Promise<number[]> {
    return (await this.rankWithUsage(query, documents)).scores;
  }

  async rankWithUsage(query: string, documents: readonly string[]): Promise<RankResult> {
    if (this.pooling !== "rank") {
      throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `rank() needs a reranker: this context pools "${this.pooling}"`, { where: "pooling" });
    }
    str(query, "query");
    if (!Array.isArray(documents)) throw new ArgumentTypeError("documents must be an array of strings", "documents");
    const template = this.model.chatTemplate("rerank");
    const lists = documents.map((doc, i) => {
      str(doc, `documents[${i}]`);
      return template !== null ? this.#rerankTemplated(template, query, doc) : this.#rerankPair(query, doc);
    });
    const { data, decodes, decodeMs } = await this.#run(lists, "documents");
    const d = this.dimensions;
    return { scores: lists.map((_, i) => data[i * d]!), tokens: lists.map((l) => l.length), decodes, decodeMs };
  }

  /** Frees the llama context (a running embed() rejects with ERR_DISPOSED). */
  dispose(): void {
    const native = this.#native;
    if (!native) return;
    this.#native = null;
    native.dispose();
    this.#onDispose();
  }

  #tokens(input: EmbeddingInput, where: string): Int32Array {
    if (typeof input === "string") return this.model.tokenize(input, { addSpecial: true, parseSpecial: true });
    if (input === null || typeof input !== "object") throw new ArgumentTypeError(`${where} must be a string or an array of token ids`, where);
    try {
      return tokenList(input, where, this.model.vocabSize);
    } catch (error) {
      // tokenList names the element in its message; the error names the input too
      if (error instanceof RangeError) throw new ArgumentRangeError(error.message, where);
      if (error instanceof TypeError) throw new ArgumentTypeError(error.message, where);
      throw error;
    }
  }

  #rerankTemplated(template: string, query: string, doc: string): Int32Array {
    const prompt = template.replaceAll("{query}", query).replaceAll("{document}", doc);
    return this.model.tokenize(prompt, { addSpecial: false, parseSpecial: true });
  }

  #rerankPair(query: string, doc: string): Int32Array {
    const m = this.model;
    const q = m.tokenize(query);
    const d = m.tokenize(doc);
    const sep = this.#sep;
    const eos = m.eos ?? sep;
    const out: number[] = [];
    if (m.addBos && m.bos !== null) out.push(m.bos);
    out.push(...q);
    if (m.addEos && eos !== null) out.push(eos);
    if (this.#addSep && sep !== null) out.push(sep);
    out.push(...d);
    if (m.addEos && eos !== null) out.push(eos);
    return Int32Array.from(out);
  }


  async #run(lists: Int32Array[], field: string): Promise<{ data: Float32Array; decodes: number; decodeMs: number; shortDecodes: number }> {
    const native = this.#alive();
    if (lists.length === 0) return { data: new Float32Array(0), decodes: 0, decodeMs: 0, shortDecodes: 0 };
    let total = 0;
    const lengths = new Uint32Array(lists.length);
    for (let i = 0; i < lists.length; i++) {
      const n = lists[i]!.length;
      if (n === 0) throw new ArgumentRangeError(`${field}[${i}] is empty (no tokens)`, `${field}[${i}]`);
      if (n > this.contextSize) {
        throw new LlamapegError("ERR_CONTEXT_FULL", `${field}[${i}] has ${n} tokens; this embedding context takes at most ${this.contextSize} per input (contextSize)`, {
          where: `${field}[${i}]`,
        });
      }
      lengths[i] = n;
      total += n;
    }
    const tokens = new Int32Array(total);
    let at = 0;
    for (const l of lists) {
      tokens.set(l, at);
      at += l.length;
    }
    try {
      return await native.embed(tokens, lengths, this.#norm);
    } catch (error) {
      throw fromNative(error, this.model.path);
    }
  }

  #alive(): NativeEmbeddingContext {
    if (!this.#native) throw new LlamapegError("ERR_DISPOSED", "the embedding context was disposed");
    return this.#native;
  }
}
