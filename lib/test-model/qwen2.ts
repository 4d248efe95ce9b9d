import { LlamapegError } from "../errors.js";
import { GGML_TYPE, type GgufFile, type GgufTensorInput, type GgufValue } from "../gguf/index.js";
import { fillUniform, float32ToFloat16Bits, hashSeed, mulberry32 } from "./random.js";

/** Shape and weights of a random qwen2 model. */
export interface TestModelOptions {
  /** Seeds every weight; same options + seed = same bytes. */
  seed: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  contextLength: number;
  ropeFreqBase: number;
  rmsNormEps: number;
  /** Storage of the 2-D weight matrices; norms and biases are always F32 (as llama.cpp's converter does). */
  weightType: "f16" | "f32";
  /**
   * Standard deviation of the output logits (the output matrix is scaled by this / sqrt(nEmbd),
   * because its input is RMS-normalised). Around 3-4 gives peaked but varied distributions.
   */
  logitScale: number;
  /** Share token_embd as the output matrix (smaller file) instead of a separate output.weight. */
  tieOutput: boolean;
  /** general.name. */
  name: string;
  /**
   * The architecture written (default "qwen2", a transformer whose KV cache trims anywhere).
   * "lfm2": a hybrid (every other layer a short convolution with recurrent state, the rest
   * attention), whose memory cannot roll back. "gemma3": sliding-window attention on every
   * layer but the last of each `slidingWindowPattern` (see lib/test-model/archs.ts). "qwen3":
   * qwen2 with per-head q/k norms and no biases (lib/test-model/qwen3.ts).
   */
  architecture?: "qwen2" | "lfm2" | "gemma3" | "qwen3";
  /** qwen3: a reranker (rank pooling, a yes / no classifier head, a rerank template; lib/test-model/qwen3.ts). */
  reranker?: boolean;
  /** gemma3: tokens each sliding-window layer sees (default 64). */
  slidingWindow?: number;
  /** lfm2: a sentence-transformers dense layer after the output norm (`dense_2`, as LFM2-ColBERT),
   * which llama.cpp applies to embeddings only. */
  denseOut?: boolean;
}

export interface TestModelSources {
  vocab: GgufFile;
  chatTemplate: string;
}

// Tensor data is produced in chunks of this many elements so "small" never sits in memory whole.
const CHUNK = 1 << 20;

/** Metadata and tensors of a qwen2 model as llama.cpp's qwen2 loader expects them. */
export function buildQwen2(options: TestModelOptions, sources: TestModelSources): { metadata: Map<string, GgufValue>; tensors: GgufTensorInput[] } {
  const o = options;
  if (o.nEmbd % o.nHead !== 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `nEmbd ${o.nEmbd} is not divisible by nHead ${o.nHead}`, { where: "nEmbd" });
  if (o.nHead % o.nHeadKv !== 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `nHead ${o.nHead} is not divisible by nHeadKv ${o.nHeadKv}`, { where: "nHeadKv" });
  const headDim = o.nEmbd / o.nHead;
  const nEmbdKv = headDim * o.nHeadKv;
  const { nVocab, metadata, tensors, matrix, vector } = startModel("qwen2", o, sources, [
    ["qwen2.attention.head_count", { type: "uint32", value: o.nHead }],
    ["qwen2.attention.head_count_kv", { type: "uint32", value: o.nHeadKv }],
  ]);

  matrix("token_embd.weight", o.nEmbd, nVocab, 1);
  vector("output_norm.weight", o.nEmbd, 0, 1);
  if (!o.tieOutput) matrix("output.weight", o.nEmbd, nVocab, o.logitScale / Math.sqrt(o.nEmbd));
  for (let i = 0; i < o.nLayer; i++) {
    const p = `blk.${i}.`;
    vector(`${p}attn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}attn_q.weight`, o.nEmbd, o.nEmbd);
    matrix(`${p}attn_k.weight`, o.nEmbd, nEmbdKv);
    matrix(`${p}attn_v.weight`, o.nEmbd, nEmbdKv);
    vector(`${p}attn_q.bias`, o.nEmbd, 0.1, 0);
    vector(`${p}attn_k.bias`, nEmbdKv, 0.1, 0);
    vector(`${p}attn_v.bias`, nEmbdKv, 0.1, 0);
    matrix(`${p}attn_output.weight`, o.nEmbd, o.nEmbd);
    vector(`${p}ffn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}ffn_gate.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_up.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_down.weight`, o.nFf, o.nEmbd);
  }
  return { metadata, tensors };
}

/** The tokenizer keys of the vocabulary file, checked (shared by every architecture's writer). */
/**
 * What every test architecture starts from: the common hparams (`heads` after the feed-forward
 * length, where the architecture keeps its head counts), the vocabulary and chat template, and
 * the tensor helpers. Weight init keeps activations O(1): matrices get std 1/sqrt(fan_in)
 * (fan_in = ne0), norms 1.
 */
export function startModel(arch: string, o: TestModelOptions, sources: TestModelSources, heads: [string, GgufValue][] = []) {
  const nVocab = vocabTokens(sources);
  const wtype = o.weightType === "f16" ? GGML_TYPE.F16 : GGML_TYPE.F32;
  const metadata = new Map<string, GgufValue>([
    ["general.architecture", { type: "string", value: arch }],
    ["general.name", { type: "string", value: o.name }],
    ["general.file_type", { type: "uint32", value: o.weightType === "f16" ? 1 : 0 }],
    [`${arch}.block_count`, { type: "uint32", value: o.nLayer }],
    [`${arch}.context_length`, { type: "uint32", value: o.contextLength }],
    [`${arch}.embedding_length`, { type: "uint32", value: o.nEmbd }],
    [`${arch}.feed_forward_length`, { type: "uint32", value: o.nFf }],
    ...heads,
    [`${arch}.rope.freq_base`, { type: "float32", value: o.ropeFreqBase }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: "float32", value: o.rmsNormEps }],
  ]);
  for (const [key, value] of sources.vocab.metadata) {
    if (key.startsWith("tokenizer.ggml.")) metadata.set(key, value);
  }
  metadata.set("tokenizer.chat_template", { type: "string", value: sources.chatTemplate });
  const tensors: GgufTensorInput[] = [];
  const matrix = (name: string, ne0: number, ne1: number, std = 1 / Math.sqrt(ne0)) =>
    tensors.push({ name, dims: [ne0, ne1], type: wtype, data: randomData(hashSeed(o.seed, name), ne0 * ne1, std, 0, wtype) });
  const vector = (name: string, n: number, std: number, mean: number) =>
    tensors.push({ name, dims: [n], type: GGML_TYPE.F32, data: randomData(hashSeed(o.seed, name), n, std, mean, GGML_TYPE.F32) });
  // Small matrices stored F32 whatever the weight type (ggml's conv op wants F32).
  const f32Matrix = (name: string, ne0: number, ne1: number, std: number) =>
    tensors.push({ name, dims: [ne0, ne1], type: GGML_TYPE.F32, data: randomData(hashSeed(o.seed, name), ne0 * ne1, std, 0, GGML_TYPE.F32) });
  return { nVocab, metadata, tensors, matrix, vector, f32Matrix };
}

export function vocabTokens(sources: TestModelSources): number {
  const tokens = sources.vocab.metadata.get("tokenizer.ggml.tokens");
  if (tokens?.type !== "array" || tokens.itemType !== "string") {
    throw new LlamapegError("ERR_MODEL_CORRUPT", "the vocabulary file has no tokenizer.ggml.tokens string array", { where: "tokenizer.ggml.tokens" });
  }
  if (sources.vocab.invalidUtf8Keys.length > 0) {
    throw new LlamapegError("ERR_MODEL_UNSUPPORTED", `vocabulary has non-UTF-8 strings in ${sources.vocab.invalidUtf8Keys.join(", ")}`);
  }
  return tokens.value.length;
}

/** Lazily generated tensor bytes; the buffers are reused between chunks (the writer copies synchronously). */
export function randomData(seed: number, count: number, std: number, mean: number, type: number): Iterable<Uint8Array> {
  return {
    *[Symbol.iterator]() {
      const rng = mulberry32(seed);
      const f32 = new Float32Array(Math.min(CHUNK, count));
      const f16 = type === GGML_TYPE.F16 ? new Uint16Array(f32.length) : undefined;
      for (let done = 0; done < count; done += f32.length) {
        const n = Math.min(f32.length, count - done);
        const values = f32.subarray(0, n);
        fillUniform(values, rng, std, mean);
        if (f16 === undefined) {
          yield new Uint8Array(values.buffer, 0, n * 4);
        } else {
          float32ToFloat16Bits(values, f16);
          yield new Uint8Array(f16.buffer, 0, n * 2);
        }
      }
    },
  };
}

/** Number of parameters the model will have (for sizing presets). */
export function countParameters(o: TestModelOptions, nVocab: number): number {
  const nEmbdKv = (o.nEmbd / o.nHead) * o.nHeadKv;
  const perLayer = 2 * o.nEmbd + 2 * o.nEmbd * o.nEmbd + 2 * o.nEmbd * nEmbdKv + o.nEmbd + 2 * nEmbdKv + 3 * o.nEmbd * o.nFf;
  return nVocab * o.nEmbd * (o.tieOutput ? 1 : 2) + o.nEmbd + o.nLayer * perLayer;
}
