/**
 * What llama.cpp's loader asserts on, checked in TypeScript before it runs. A damaged header that
 * llama.cpp merely rejects is its error; one that reaches a GGML_ASSERT, an integer division by
 * zero or an out-of-range read aborts the whole process, so those cases must never get that far.
 * Each check names the llama.cpp code it guards (vendor/llama.cpp: src/llama-model.cpp
 * `load_hparams`, src/llama-vocab.cpp `load`, src/llama-model-loader.cpp, ggml/src/gguf.cpp, and
 * ggml's own asserts in the graph it builds).
 *
 * Errors: ERR_MODEL_CORRUPT (`where`: the source and the key or tensor), ERR_MODEL_UNSUPPORTED
 * for well-formed files llama.cpp cannot read (nested arrays, unknown tensor types).
 */
import { LlamapegError } from "../errors.js";
import { GGML_TYPES, type GgufFile, type GgufValue } from "./types.js";

export interface ValidateGgufOptions {
  /** The file is loaded for its tokenizer only: hyper-parameters and tensors are not read. Default false. */
  vocabOnly?: boolean;
  /** Names the file in messages (a path). */
  source?: string;
}

// src/llama-hparams.h
const LLAMA_MAX_LAYERS = 512;
const LLAMA_MAX_EXPERTS = 1024;
// ggml.h: GGML_MAX_NAME
const GGML_MAX_NAME = 64;
// ggml-backend: tensor data in a mapped file must be 32-byte aligned (TENSOR_ALIGNMENT)
const MIN_ALIGNMENT = 32;
// src/llama-model.cpp LLAMA_ROPE_SCALING_TYPES
const ROPE_SCALING_TYPES = new Set(["none", "linear", "yarn", "longrope"]);
// src/llama-arch.cpp llm_arch_is_recurrent / llm_arch_is_hybrid: layers without attention exist
const RECURRENT_OR_HYBRID = new Set([
  "mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe",
  "nemotron_h", "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "qwen35", "qwen35moe", "qwen4exp", "deepseek4",
  "minimax-01",
]);

/**
 * Throws when `file` would make llama.cpp abort (or is something it cannot read); returns
 * otherwise. `readGgufFile(path, {validate: true})` runs it on a file.
 */
export function validateGguf(file: GgufFile, options: ValidateGgufOptions = {}): void {
  new Validator(file, options).run();
}

class Validator {
  private readonly md: Map<string, GgufValue>;
  private readonly arch: string;

  constructor(
    private readonly file: GgufFile,
    private readonly options: ValidateGgufOptions,
  ) {
    this.md = file.metadata;
    const arch = this.md.get("general.architecture");
    this.arch = arch?.type === "string" ? arch.value : "";
  }

  run(): void {
    this.structure();
    this.vocabulary();
    if (!this.options.vocabOnly && this.arch !== "clip") {
      this.hyperParameters();
      this.tensors();
    }
  }

  private fail(where: string, message: string, code: "ERR_MODEL_CORRUPT" | "ERR_MODEL_UNSUPPORTED" = "ERR_MODEL_CORRUPT"): never {
    const name = this.options.source ?? "GGUF data";
    throw new LlamapegError(code, `${name}: ${message}`, { where: this.options.source !== undefined ? `${this.options.source}:${where}` : where });
  }

  // ---- file structure (gguf.cpp) ---------------------------------------------------------------

  private structure(): void {
    for (const [key, value] of this.md) {
      if (key === "") this.fail("metadata", "a metadata key is empty");
      if (value.type === "array" && value.itemType === "array") this.fail(key, `${key} holds nested arrays, which llama.cpp cannot read`, "ERR_MODEL_UNSUPPORTED");
    }
    if (this.file.alignment < MIN_ALIGNMENT) {
      this.fail("general.alignment", `general.alignment is ${this.file.alignment}; tensor data must be aligned to at least ${MIN_ALIGNMENT} bytes`);
    }
    const split = this.md.get("split.count");
    if (split !== undefined) {
      // llama-model-loader reads these with gguf_get_val_u16 / _i32, which assert on the type
      this.expectType("split.count", "uint16");
      this.expectType("split.no", "uint16");
      this.expectType("split.tensors.count", "int32");
    }
  }

  private expectType(key: string, type: GgufValue["type"]): void {
    const v = this.md.get(key);
    if (v !== undefined && v.type !== type) this.fail(key, `${key} must be ${type}, got ${v.type}`);
  }

  // ---- tokenizer (llama-vocab.cpp load) --------------------------------------------------------

  private vocabulary(): void {
    const model = this.md.get("tokenizer.ggml.model");
    // llama.cpp loads these, then GGML_ASSERTs on the first tokenize ("Tokenizer not initialized")
    if (model?.type === "string" && (model.value === "none" || model.value === "no_vocab")) {
      this.fail("tokenizer.ggml.model", `the model has no tokenizer (tokenizer.ggml.model ${JSON.stringify(model.value)})`, "ERR_MODEL_UNSUPPORTED");
    }
    const tokens = this.md.get("tokenizer.ggml.tokens");
    if (tokens === undefined) return; // llama.cpp throws "cannot find tokenizer vocab"
    if (tokens.type !== "array" || tokens.itemType !== "string") return; // it throws "invalid gguf type"
    const list = tokens.value;
    // SPM falls back to <0xXX> byte tokens for any character it lacks (unordered_map::at otherwise)
    if (model?.type === "string" && model.value === "llama") {
      const have = new Set(list);
      for (let b = 0; b < 256; b++) {
        const byte = `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
        if (!have.has(byte)) this.fail("tokenizer.ggml.tokens", `an SPM vocabulary needs its 256 byte tokens; ${byte} is missing`, "ERR_MODEL_UNSUPPORTED");
      }
    }
    // token_to_id is keyed by the C string (cut at the first NUL); an empty one becomes
    // "[EMPTY_i]"; then GGML_ASSERT(id_to_token.size() == token_to_id.size()) needs them distinct
    const seen = new Map<string, number>();
    for (let i = 0; i < list.length; i++) {
      const raw = list[i]!;
      if (raw.includes("\0")) this.fail(`tokenizer.ggml.tokens[${i}]`, `token ${i} contains a NUL character`);
      const text = raw === "" ? `[EMPTY_${i}]` : raw;
      const prev = seen.get(text);
      if (prev !== undefined) this.fail(`tokenizer.ggml.tokens[${i}]`, `token ${i} ${JSON.stringify(text)} repeats token ${prev}`);
      seen.set(text, i);
    }
    // WPM always adds CLS (bos) and SEP around a text (GGML_ASSERT on both ids when tokenizing)
    if (model?.type === "string" && model.value === "bert") {
      for (const [key, fallback] of [
        ["tokenizer.ggml.bos_token_id", 101],
        ["tokenizer.ggml.seperator_token_id", 102],
      ] as const) {
        const v = this.md.get(key);
        const id = v !== undefined && typeof v.value === "number" && Number.isInteger(v.value) && v.value >= 0 && v.value < list.length ? v.value : fallback;
        if (id >= list.length) this.fail(key, `a BERT vocabulary of ${list.length} tokens has no ${key.includes("bos") ? "CLS" : "SEP"} token`);
      }
    }
  }

  // ---- hyper-parameters (llama-model.cpp load_hparams) -----------------------------------------

  private key(name: string): string {
    return `${this.arch}.${name}`;
  }

  /** An unsigned integer hyper-parameter, when present with the type llama.cpp reads. */
  private uint(name: string): number | undefined {
    const v = this.md.get(this.key(name));
    if (v === undefined) return undefined;
    if (v.type === "uint32" || v.type === "int32" || v.type === "uint16" || v.type === "uint8") return v.value;
    if (v.type === "uint64" || v.type === "int64") return Number(v.value);
    return undefined; // another type: llama.cpp's get_key throws
  }

  /** A per-layer value (a scalar for every layer, or an array with one entry per layer). */
  private perLayer(name: string, layers: number): number[] | undefined {
    const v = this.md.get(this.key(name));
    if (v === undefined) return undefined;
    if (v.type === "array") {
      if (v.itemType !== "int32" && v.itemType !== "uint32") return undefined;
      if (v.value.length !== layers) return undefined; // get_key_or_arr throws on a length mismatch
      return Array.from(v.value as ArrayLike<number>);
    }
    const n = this.uint(name);
    return n === undefined ? undefined : new Array<number>(layers).fill(n);
  }

  private hyperParameters(): void {
    const layers = this.uint("block_count");
    if (layers === undefined) return; // required: llama.cpp throws when it is missing or mistyped
    if (layers < 1 || layers > LLAMA_MAX_LAYERS) this.fail(this.key("block_count"), `${this.key("block_count")} is ${layers}; llama.cpp supports 1 to ${LLAMA_MAX_LAYERS} layers`);
    const nextn = this.uint("nextn_predict_layers");
    if (nextn !== undefined && nextn > layers) this.fail(this.key("nextn_predict_layers"), `${this.key("nextn_predict_layers")} ${nextn} exceeds the ${layers} layers`);

    // experts
    const experts = this.uint("expert_count") ?? 0;
    const used = Math.max(0, ...(this.perLayer("expert_used_count", layers) ?? [0]));
    const groups = this.uint("expert_group_count") ?? 0;
    const groupUsed = this.uint("expert_group_used_count") ?? 0;
    const ek = this.key("expert_count");
    if (experts > LLAMA_MAX_EXPERTS) this.fail(ek, `${ek} ${experts} exceeds llama.cpp's ${LLAMA_MAX_EXPERTS}`);
    if (used > experts) this.fail(this.key("expert_used_count"), `${this.key("expert_used_count")} ${used} exceeds ${ek} ${experts}`);
    if (experts > 0) {
      if (used === 0) this.fail(this.key("expert_used_count"), `${ek} is ${experts} but no expert is used per token`);
      if (groups >= experts) this.fail(this.key("expert_group_count"), `${this.key("expert_group_count")} ${groups} must be below ${ek} ${experts}`);
      if (groups > 1 && (experts % groups !== 0 || groupUsed === 0 || groupUsed >= groups)) {
        this.fail(this.key("expert_group_count"), `expert groups (${groups} groups, ${groupUsed} used) do not divide ${experts} experts`);
      }
    } else if (groups !== 0) {
      this.fail(this.key("expert_group_count"), `${this.key("expert_group_count")} is ${groups} without experts`);
    }

    // rope scaling: an unknown name is GGML_ASSERT(rope_scaling_type_train != UNSPECIFIED)
    const scaling = this.md.get(this.key("rope.scaling.type"));
    if (scaling?.type === "string" && !ROPE_SCALING_TYPES.has(scaling.value)) {
      this.fail(this.key("rope.scaling.type"), `${this.key("rope.scaling.type")} ${JSON.stringify(scaling.value)} is not one of ${[...ROPE_SCALING_TYPES].join(", ")}`);
    }

    // attention heads: n_gqa() divides by the per-layer KV head count
    const heads = this.perLayer("attention.head_count", layers);
    const kvHeads = this.perLayer("attention.head_count_kv", layers) ?? heads;
    if (heads !== undefined && kvHeads !== undefined && !RECURRENT_OR_HYBRID.has(this.arch)) {
      for (let il = 0; il < layers; il++) {
        const h = heads[il]!;
        const kv = kvHeads[il]!;
        if (h > 0 && kv === 0) this.fail(this.key("attention.head_count_kv"), `layer ${il} has ${h} attention heads but 0 KV heads`);
        if (kv > h && h > 0) this.fail(this.key("attention.head_count_kv"), `layer ${il} has more KV heads (${kv}) than attention heads (${h})`);
      }
    }

    // norm epsilons: ggml_norm / ggml_rms_norm assert eps >= 0 (NaN fails it too)
    for (const name of ["attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.group_norm_epsilon"]) {
      const v = this.md.get(this.key(name));
      if ((v?.type === "float32" || v?.type === "float64") && !(Number.isFinite(v.value) && v.value >= 0)) {
        this.fail(this.key(name), `${this.key(name)} is ${v.value}; a norm epsilon must be a finite number >= 0`);
      }
    }
  }

  // ---- tensors (llama-model-loader.cpp, gguf.cpp) ----------------------------------------------

  private tensors(): void {
    for (const t of this.file.tensors) {
      const where = `tensor ${t.name}`;
      if (t.name === "") this.fail("tensors", "a tensor has an empty name");
      if (Buffer.byteLength(t.name, "utf8") >= GGML_MAX_NAME) this.fail(where, `tensor name ${JSON.stringify(t.name.slice(0, 80))} is longer than ${GGML_MAX_NAME - 1} bytes`);
      if (GGML_TYPES[t.type] === undefined) this.fail(where, `tensor ${t.name} has ggml type ${t.type}, which this llama.cpp does not know`, "ERR_MODEL_UNSUPPORTED");
      let elements = 1;
      for (const [d, n] of t.dims.entries()) {
        // llama_model_loader::create_tensor: GGML_ASSERT(ne[dim] >= 1)
        if (n < 1) this.fail(where, `tensor ${t.name} dimension ${d} is ${n}`);
        elements *= n;
      }
      if (elements >= 2 ** 53) this.fail(where, `tensor ${t.name} has ${t.dims.join(" x ")} elements, too many to address`);
    }
  }
}
