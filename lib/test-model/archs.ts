/**
 * Random-weight test models of the two memory kinds that cannot simply trim their KV cache:
 * "lfm2" (hybrid: short-convolution layers with recurrent state alternating with attention
 * layers; llama.cpp's llama_memory_hybrid, whose seq_rm fails past the recurrent tail) and
 * "gemma3" (sliding-window attention; with swa_full off llama.cpp keeps only the window's cells,
 * llama_kv_cache_iswa). The tensors and hparams follow vendor/llama.cpp/src/models/{lfm2,gemma3}.cpp
 * and tests/test-llama-archs.cpp. Same tokenizer and chat template as the qwen2 models.
 */
import type { GgufTensorInput, GgufValue } from "../gguf/index.js";
import { startModel, type TestModelOptions, type TestModelSources } from "./qwen2.js";

type Built = { metadata: Map<string, GgufValue>; tensors: GgufTensorInput[] };

/** lfm2: odd layers are short convolutions (recurrent state), even layers attention. */
export function buildLfm2(o: TestModelOptions, sources: TestModelSources): Built {
  const { nVocab, metadata, tensors, matrix, vector, f32Matrix } = startModel("lfm2", o, sources);
  const headDim = o.nEmbd / o.nHead;
  const isConv = (i: number) => i % 2 === 1;
  const heads = Array.from({ length: o.nLayer }, (_, i) => (isConv(i) ? 0 : o.nHead));
  const headsKv = Array.from({ length: o.nLayer }, (_, i) => (isConv(i) ? 0 : o.nHeadKv));
  const lCache = 3;
  metadata.set("lfm2.attention.head_count", { type: "array", itemType: "uint32", value: Uint32Array.from(heads) });
  metadata.set("lfm2.attention.head_count_kv", { type: "array", itemType: "uint32", value: Uint32Array.from(headsKv) });
  metadata.set("lfm2.shortconv.l_cache", { type: "uint32", value: lCache });

  matrix("token_embd.weight", o.nEmbd, nVocab, 1);
  vector("token_embd_norm.weight", o.nEmbd, 0, 1); // lfm2's output norm (llama.cpp's name for it)
  matrix("output.weight", o.nEmbd, nVocab, o.logitScale / Math.sqrt(o.nEmbd));
  for (let i = 0; i < o.nLayer; i++) {
    const p = `blk.${i}.`;
    vector(`${p}attn_norm.weight`, o.nEmbd, 0, 1);
    if (isConv(i)) {
      f32Matrix(`${p}shortconv.conv.weight`, lCache, o.nEmbd, 1 / Math.sqrt(lCache));
      matrix(`${p}shortconv.in_proj.weight`, o.nEmbd, 3 * o.nEmbd);
      matrix(`${p}shortconv.out_proj.weight`, o.nEmbd, o.nEmbd);
    } else {
      vector(`${p}attn_q_norm.weight`, headDim, 0, 1);
      vector(`${p}attn_k_norm.weight`, headDim, 0, 1);
      matrix(`${p}attn_q.weight`, o.nEmbd, o.nEmbd);
      matrix(`${p}attn_k.weight`, o.nEmbd, headDim * o.nHeadKv);
      matrix(`${p}attn_v.weight`, o.nEmbd, headDim * o.nHeadKv);
      matrix(`${p}attn_output.weight`, o.nEmbd, o.nEmbd);
    }
    vector(`${p}ffn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}ffn_gate.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_up.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_down.weight`, o.nFf, o.nEmbd);
  }
  if (o.denseOut === true) {
    matrix("dense_2.weight", o.nEmbd, o.nEmbd);
    vector("dense_2.bias", o.nEmbd, 0.1, 0);
  }
  return { metadata, tensors };
}

/** gemma3: with pattern 2, even layers slide over `slidingWindow` tokens, odd layers see all. */
export function buildGemma3(o: TestModelOptions, sources: TestModelSources): Built {
  const { nVocab, metadata, tensors, matrix, vector } = startModel("gemma3", o, sources);
  const headDim = o.nEmbd / o.nHead;
  metadata.set("gemma3.attention.head_count", { type: "uint32", value: o.nHead });
  metadata.set("gemma3.attention.head_count_kv", { type: "uint32", value: o.nHeadKv });
  metadata.set("gemma3.attention.key_length", { type: "uint32", value: headDim });
  metadata.set("gemma3.attention.value_length", { type: "uint32", value: headDim });
  metadata.set("gemma3.attention.sliding_window", { type: "uint32", value: o.slidingWindow ?? 64 });
  metadata.set("gemma3.attention.sliding_window_pattern", { type: "uint32", value: 2 });
  metadata.set("gemma3.rope.freq_base_swa", { type: "float32", value: 10_000 });

  // gemma scales embeddings by sqrt(nEmbd): keep them small so activations stay O(1).
  matrix("token_embd.weight", o.nEmbd, nVocab, 1 / Math.sqrt(o.nEmbd));
  vector("output_norm.weight", o.nEmbd, 0, 1);
  matrix("output.weight", o.nEmbd, nVocab, o.logitScale / Math.sqrt(o.nEmbd));
  for (let i = 0; i < o.nLayer; i++) {
    const p = `blk.${i}.`;
    vector(`${p}attn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}attn_q.weight`, o.nEmbd, o.nEmbd);
    matrix(`${p}attn_k.weight`, o.nEmbd, headDim * o.nHeadKv);
    matrix(`${p}attn_v.weight`, o.nEmbd, headDim * o.nHeadKv);
    matrix(`${p}attn_output.weight`, o.nEmbd, o.nEmbd);
    vector(`${p}post_attention_norm.weight`, o.nEmbd, 0, 1);
    vector(`${p}attn_q_norm.weight`, headDim, 0, 1);
    vector(`${p}attn_k_norm.weight`, headDim, 0, 1);
    vector(`${p}ffn_norm.weight`, o.nEmbd, 0, 1);
    matrix(`${p}ffn_gate.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_up.weight`, o.nEmbd, o.nFf);
    matrix(`${p}ffn_down.weight`, o.nFf, o.nEmbd);
    vector(`${p}post_ffw_norm.weight`, o.nEmbd, 0, 1);
  }
  return { metadata, tensors };
}
