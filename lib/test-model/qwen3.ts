/**
 * Random-weight qwen3 test models, and with `reranker` a qwen3 reranker: rank pooling on the last
 * token, a two-label classifier head (`cls.output.weight`, labels yes / no) whose softmaxed first
 * output is the relevance score, and a `rerank` prompt template (tokenizer.chat_template.rerank).
 * Tensors and keys follow vendor/llama.cpp/src/models/qwen3.cpp and build_pooling's RANK case
 * (llama-graph.cpp). Same tokenizer and chat template as the qwen2 models.
 */
import { GGML_TYPE, type GgufTensorInput, type GgufValue } from "../gguf/index.js";
import { hashSeed } from "./random.js";
import { randomData, vocabTokens, type TestModelOptions, type TestModelSources } from "./qwen2.js";

/** Our own rerank prompt (the Qwen3-Reranker shape: a user turn naming query and document). */
export const TEST_RERANK_TEMPLATE = "<|im_start|>user\nQuery: {query}\nDocument: {document}<|im_end|>\n<|im_start|>assistant\n";

export function buildQwen3(o: TestModelOptions, sources: TestModelSources): { metadata: Map<string, GgufValue>; tensors: GgufTensorInput[] } {
  const nVocab = vocabTokens(sources);
  const headDim = o.nEmbd / o.nHead;
  const wtype = o.weightType === "f16" ? GGML_TYPE.F16 : GGML_TYPE.F32;
  const metadata = new Map<string, GgufValue>([
    ["general.architecture", { type: "string", value: "qwen3" }],
    ["general.name", { type: "string", value: o.name }],
    ["general.file_type", { type: "uint32", value: o.weightType === "f16" ? 1 : 0 }],
    ["qwen3.block_count", { type: "uint32", value: o.nLayer }],
    ["qwen3.context_length", { type: "uint32", value: o.contextLength }],
    ["qwen3.embedding_length", { type: "uint32", value: o.nEmbd }],
    ["qwen3.feed_forward_length", { type: "uint32", value: o.nFf }],
    ["qwen3.attention.head_count", { type: "uint32", value: o.nHead }],
    ["qwen3.attention.head_count_kv", { type: "uint32", value: o.nHeadKv }],
    ["qwen3.rope.freq_base", { type: "float32", value: o.ropeFreqBase }],
    ["qwen3.attention.layer_norm_rms_epsilon", { type: "float32", value: o.rmsNormEps }],
  ]);
  for (const [key, value] of sources.vocab.metadata) {
    if (key.startsWith("tokenizer.ggml.")) metadata.set(key, value);
  }
  metadata.set("tokenizer.chat_template", { type: "string", value: sources.chatTemplate });
  if (o.reranker) {
    metadata.set("qwen3.pooling_type", { type: "uint32", value: 4 }); // LLAMA_POOLING_TYPE_RANK
    metadata.set("qwen3.classifier.output_labels", { type: "array", itemType: "string", value: ["yes", "no"] });
    metadata.set("tokenizer.chat_template.rerank", { type: "string", value: TEST_RERANK_TEMPLATE });
  }
  const tensors: GgufTensorInput[] = [];
  const matrix = (name: string, ne0: number, ne1: number, std = 1 / Math.sqrt(ne0)) =>
    tensors.push({ name, dims: [ne0, ne1], type: wtype, data: randomData(hashSeed(o.seed, name), ne0 * ne1, std, 0, wtype) });
  const vector = (name: string, n: number, std: number, mean: number) =>
    tensors.push({ name, dims: [n], type: GGML_TYPE.F32, data: randomData(hashSeed(o.seed, name), n, std, mean, GGML_TYPE.F32) });

  matrix("token_embd.weight", o.nEmbd, nVocab, 1);
  vector("output_norm.weight", o.nEmbd, 0, 1);
  if (!o.tieOutput) matrix("output.weight", o.nEmbd, nVocab, o.logitScale / Math.sqrt(o.nEmbd));
  // The head sees an RMS-normalised row: std 1/sqrt(nEmbd) keeps its two logits O(1).
  if (o.reranker) matrix("cls.output.weight", o.nEmbd, 2);
  for (let i = 0; i < o.nLayer; i++) {
    const p = `blk.${i}.`;
    vector(`${p}attn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}attn_q.weight`, o.nEmbd, o.nHead * headDim);
    matrix(`${p}attn_k.weight`, o.nEmbd, o.nHeadKv * headDim);
    matrix(`${p}attn_v.weight`, o.nEmbd, o.nHeadKv * headDim);
    matrix(`${p}attn_output.weight`, o.nHead * headDim, o.nEmbd);
    vector(`${p}attn_q_norm.weight`, headDim, 0, 1);
    vector(`${p}attn_k_norm.weight`, headDim, 0, 1);
    vector(`${p}ffn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}ffn_gate.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_up.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_down.weight`, o.nFf, o.nEmbd);
  }
  return { metadata, tensors };
}
