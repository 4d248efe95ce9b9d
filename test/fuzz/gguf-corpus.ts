// Damaged GGUF files, made from a small valid qwen2 model (the Qwen2 tokenizer cut to its first
// 1000 tokens plus its three control tokens, two layers of width 32): every way the header,
// the metadata (hyper-parameters, tokenizer tables) and the tensor table can be wrong. Each
// variant is a whole file. Deterministic: the random byte mutations come from a seed.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { readGgufFileSync, type GgufFile, type GgufValue } from "../../lib/gguf/index.js";
import { buildQwen2 } from "../../lib/test-model/qwen2.js";
import { mulberry32 } from "../../lib/test-model/random.js";
import { encodeRawGguf, type RawGguf, type RawTensor } from "./gguf-encode.js";

const ROOT = join(import.meta.dirname, "..", "..");
const KEEP = 1000;
const CONTROLS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

export interface GgufVariant {
  name: string;
  /** Which part is damaged: header (bytes), metadata, tokenizer, tensors. */
  part: "header" | "metadata" | "tokenizer" | "tensors" | "valid";
  /** Load for the tokenizer only. */
  vocabOnly: boolean;
  bytes: Buffer;
}

/** The small valid model as raw parts (metadata in file order, tensors with their bytes). */
export function miniModel(): RawGguf {
  const vocab = readGgufFileSync(join(ROOT, "vendor/llama.cpp/models/ggml-vocab-qwen2.gguf"));
  const md = vocab.metadata;
  const tokens = (md.get("tokenizer.ggml.tokens") as { value: string[] }).value;
  const types = (md.get("tokenizer.ggml.token_type") as { value: Int32Array }).value;
  const kept = [...tokens.slice(0, KEEP), ...CONTROLS];
  const keptSet = new Set(kept);
  const merges = (md.get("tokenizer.ggml.merges") as { value: string[] }).value.filter((m) => {
    const at = m.indexOf(" ", 1);
    const a = m.slice(0, at);
    const b = m.slice(at + 1);
    return keptSet.has(a) && keptSet.has(b) && keptSet.has(a + b);
  });
  const eos = KEEP; // <|endoftext|>
  const small = new Map<string, GgufValue>([
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    ["tokenizer.ggml.pre", { type: "string", value: "qwen2" }],
    ["tokenizer.ggml.tokens", { type: "array", itemType: "string", value: kept }],
    ["tokenizer.ggml.token_type", { type: "array", itemType: "int32", value: Int32Array.from([...types.slice(0, KEEP), 3, 3, 3]) }],
    ["tokenizer.ggml.merges", { type: "array", itemType: "string", value: merges }],
    ["tokenizer.ggml.eos_token_id", { type: "uint32", value: eos }],
    ["tokenizer.ggml.padding_token_id", { type: "uint32", value: eos }],
    ["tokenizer.ggml.bos_token_id", { type: "uint32", value: eos }],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: false }],
  ]);
  const chatTemplate = readFileSync(join(ROOT, "vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
  const built = buildQwen2(
    { seed: 1, nEmbd: 32, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 64, contextLength: 512, ropeFreqBase: 1e6, rmsNormEps: 1e-6, weightType: "f32", logitScale: 3, tieOutput: false, name: "fuzz-mini" },
    { vocab: { ...vocab, metadata: small, invalidUtf8Keys: [] } as GgufFile, chatTemplate },
  );
  const tensors: RawTensor[] = built.tensors.map((t) => {
    const chunks = t.data instanceof Uint8Array ? [t.data] : [...t.data].map((c) => Uint8Array.from(c));
    return { name: t.name, dims: [...t.dims], type: t.type, data: Buffer.concat(chunks) };
  });
  return { metadata: [...built.metadata], tensors };
}

type Md = [string, GgufValue][];

const u32 = (value: number): GgufValue => ({ type: "uint32", value });
const f32 = (value: number): GgufValue => ({ type: "float32", value });
const str = (value: string): GgufValue => ({ type: "string", value });
const i32s = (...v: number[]): GgufValue => ({ type: "array", itemType: "int32", value: Int32Array.from(v) });

function setKey(md: Md, key: string, v: GgufValue | undefined): Md {
  const out = md.filter(([k]) => k !== key);
  if (v === undefined) return out;
  const at = md.findIndex(([k]) => k === key);
  if (at < 0) out.push([key, v]);
  else out.splice(at, 0, [key, v]);
  return out;
}

function nestedArray(depth: number): GgufValue {
  let v: GgufValue = { type: "array", itemType: "uint8", value: Uint8Array.of(1) };
  for (let i = 0; i < depth; i++) v = { type: "array", itemType: "array", value: [v] } as GgufValue;
  return v;
}

/** Every damaged variant (and the valid base, first). "ci" makes fewer random byte mutations. */
export function ggufCorpus(seed = 1, size: "ci" | "long" = "long"): GgufVariant[] {
  const flips = size === "ci" ? 20 : 300;
  const overwrites = size === "ci" ? 10 : 150;
  const base = miniModel();
  const out: GgufVariant[] = [];
  const add = (name: string, part: GgufVariant["part"], g: RawGguf, vocabOnly = false) => out.push({ name, part, vocabOnly, bytes: encodeRawGguf(g) });
  const meta = (name: string, part: GgufVariant["part"], md: Md, both = part === "tokenizer") => {
    add(name, part, { ...base, metadata: md });
    if (both) add(`${name} (vocab only)`, part, { ...base, metadata: md }, true);
  };
  const tens = (name: string, tensors: RawTensor[], extra: Partial<RawGguf> = {}) => add(name, "tensors", { ...base, ...extra, tensors });

  add("valid", "valid", base);
  add("valid (vocab only)", "valid", base, true);
  const valid = encodeRawGguf(base);
  const headerEnd = valid.indexOf(Buffer.from("token_embd.weight")) + 600;

  // ---- header: bytes --------------------------------------------------------------------------
  const bytes = (name: string, b: Buffer) => out.push({ name, part: "header", vocabOnly: false, bytes: b });
  for (let i = 0; i < 24; i++) {
    const at = Math.floor(((i + 1) / 25) * headerEnd);
    bytes(`truncated in the header at ${at}`, valid.subarray(0, at));
  }
  for (const f of [0.3, 0.6, 0.9, 0.999]) bytes(`truncated in the data at ${f}`, valid.subarray(0, Math.floor(valid.length * f)));
  for (const m of [0x47554747, 0x4c4d4747, 0]) add(`magic 0x${m.toString(16)}`, "header", { ...base, magic: m });
  for (const v of [0, 1, 2, 4, 0x03000000, 0xffffffff]) add(`version ${v}`, "header", { ...base, version: v });
  for (const n of [0n, 26n, 1000n, 1n << 62n, (1n << 64n) - 1n]) add(`tensor count ${n}`, "header", { ...base, tensorCount: n });
  for (const n of [0n, 10n, BigInt(base.metadata.length + 1), 1n << 62n]) add(`metadata count ${n}`, "header", { ...base, kvCount: n });
  const rng = mulberry32(seed);
  for (let i = 0; i < flips; i++) {
    const b = Buffer.from(valid);
    const flips = 1 + Math.floor(rng() * 4);
    for (let j = 0; j < flips; j++) b[Math.floor(rng() * headerEnd)] ^= 1 << Math.floor(rng() * 8);
    bytes(`random bit flips ${i}`, b);
  }
  for (let i = 0; i < overwrites; i++) {
    const at = Math.floor(rng() * (headerEnd - 8));
    const c = Buffer.from(valid);
    c.fill(rng() < 0.5 ? 0xff : 0x00, at, at + 8);
    bytes(`8 bytes overwritten at ${at}`, c);
  }

  // ---- metadata: hyper-parameters --------------------------------------------------------------
  const md = base.metadata;
  for (const key of ["block_count", "context_length", "embedding_length", "feed_forward_length", "attention.head_count", "attention.head_count_kv"]) {
    const k = `qwen2.${key}`;
    for (const v of [0, 1, 3, 513, 2 ** 31, 2 ** 32 - 1]) meta(`${k} = ${v}`, "metadata", setKey(md, k, u32(v)));
    const wrong: [string, GgufValue][] = [
      ["float32", f32(2)],
      ["string", str("2")],
      ["int8", { type: "int8", value: 2 }],
      ["uint64", { type: "uint64", value: 2n }],
      ["int32 array", i32s(2, 2)],
      ["missing", undefined as unknown as GgufValue],
    ];
    for (const [what, v] of wrong) meta(`${k} as ${what}`, "metadata", setKey(md, k, v));
  }
  for (const [what, v] of [
    ["head_count_kv [2, 0]", i32s(2, 0)],
    ["head_count_kv [0, 2]", i32s(0, 2)],
    ["head_count_kv [2]", i32s(2)],
    ["head_count_kv [2, 2, 2]", i32s(2, 2, 2)],
    ["head_count_kv [8, 8]", i32s(8, 8)],
  ] as const)
    meta(`per layer ${what}`, "metadata", setKey(md, "qwen2.attention.head_count_kv", v));
  meta("per layer head_count [4, 0]", "metadata", setKey(md, "qwen2.attention.head_count", i32s(4, 0)));
  meta("per layer head_count [0, 0]", "metadata", setKey(md, "qwen2.attention.head_count", i32s(0, 0)));
  for (const v of [NaN, -1, -1e-6, Infinity, -Infinity, 0, 1e30]) meta(`rms epsilon ${v}`, "metadata", setKey(md, "qwen2.attention.layer_norm_rms_epsilon", f32(v)));
  meta("rms epsilon as string", "metadata", setKey(md, "qwen2.attention.layer_norm_rms_epsilon", str("1e-6")));
  for (const v of [0, NaN, -1, Infinity]) meta(`rope freq base ${v}`, "metadata", setKey(md, "qwen2.rope.freq_base", f32(v)));
  for (const v of ["bogus", "", "yarn", "longrope", "none"]) meta(`rope scaling type ${JSON.stringify(v)}`, "metadata", setKey(md, "qwen2.rope.scaling.type", str(v)));
  for (const v of [0, NaN, -2, 1e-30]) meta(`rope scaling factor ${v}`, "metadata", setKey(setKey(md, "qwen2.rope.scaling.type", str("linear")), "qwen2.rope.scaling.factor", f32(v)));
  const experts: [string, [string, GgufValue][]][] = [
    ["expert_count 2000", [["qwen2.expert_count", u32(2000)]]],
    ["4 experts, none used", [["qwen2.expert_count", u32(4)]]],
    ["4 experts, 5 used", [["qwen2.expert_count", u32(4)], ["qwen2.expert_used_count", u32(5)]]],
    ["4 experts in 4 groups", [["qwen2.expert_count", u32(4)], ["qwen2.expert_used_count", u32(2)], ["qwen2.expert_group_count", u32(4)]]],
    ["6 experts in 4 groups", [["qwen2.expert_count", u32(6)], ["qwen2.expert_used_count", u32(2)], ["qwen2.expert_group_count", u32(4)], ["qwen2.expert_group_used_count", u32(1)]]],
    ["expert groups without experts", [["qwen2.expert_group_count", u32(2)]]],
    ["experts used without experts", [["qwen2.expert_used_count", u32(2)]]],
  ];
  for (const [what, keys] of experts) meta(what, "metadata", keys.reduce((m, [k, v]) => setKey(m, k, v), md));
  meta("nextn_predict_layers 3 of 2", "metadata", setKey(md, "qwen2.nextn_predict_layers", u32(3)));
  for (const v of [1, 2, 4, 8, 16, 64, 4096]) add(`general.alignment ${v}`, "metadata", { ...base, alignment: v, metadata: setKey(md, "general.alignment", u32(v)) });
  for (const v of [0, 3, 31, 2 ** 31]) meta(`general.alignment ${v} (file packed at 32)`, "metadata", setKey(md, "general.alignment", u32(v)));
  meta("general.alignment as uint64", "metadata", setKey(md, "general.alignment", { type: "uint64", value: 32n }));
  meta("general.alignment as string", "metadata", setKey(md, "general.alignment", str("32")));
  for (const v of [undefined, str(""), str("qwenx"), u32(2), str("clip"), str("llama"), str("mamba"), str("bert")])
    meta(`general.architecture ${v === undefined ? "missing" : JSON.stringify(v.value)}`, "metadata", setKey(md, "general.architecture", v));
  for (const [name, v] of [
    ["split.count 2", [["split.count", { type: "uint16", value: 2 } as GgufValue], ["split.no", { type: "uint16", value: 0 } as GgufValue]]],
    ["split.count as uint32", [["split.count", u32(2)]]],
    ["split.no as string", [["split.count", { type: "uint16", value: 2 } as GgufValue], ["split.no", str("0")]]],
  ] as [string, [string, GgufValue][]][])
    meta(name, "metadata", v.reduce((m, [k, x]) => setKey(m, k, x), md));
  for (const depth of [2, 100, 10_000]) meta(`nested metadata array ${depth} deep`, "metadata", setKey(md, "fuzz.nested", nestedArray(depth)));
  meta("empty metadata key", "metadata", [["", u32(1)], ...md]);
  meta("1 MB metadata key", "metadata", [["k".repeat(1 << 20), u32(1)], ...md]);
  meta("duplicate metadata key", "metadata", [...md, ["general.name", str("again")]]);
  {
    const b = Buffer.from(valid);
    const at = b.indexOf(Buffer.from("fuzz-mini"));
    b.set([0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1], at);
    bytes("invalid UTF-8 in general.name", b);
  }
  meta("chat template as uint32", "metadata", setKey(md, "tokenizer.chat_template", u32(1)));
  meta("chat template of 4 MB", "metadata", setKey(md, "tokenizer.chat_template", str("{{ 'x' }}".repeat(500_000))));

  // ---- tokenizer ------------------------------------------------------------------------------
  const tokens = [...((md.find(([k]) => k === "tokenizer.ggml.tokens")![1] as { value: string[] }).value)];
  const withTokens = (t: string[]): Md => setKey(md, "tokenizer.ggml.tokens", { type: "array", itemType: "string", value: t });
  const edited = (i: number, s: string): string[] => tokens.map((t, j) => (j === i ? s : t));
  meta("duplicate token", "tokenizer", withTokens(edited(5, tokens[6]!)));
  meta("duplicate control token", "tokenizer", withTokens(edited(KEEP + 1, CONTROLS[2]!)));
  meta("token with a NUL inside", "tokenizer", withTokens(edited(5, "a\0b")));
  meta("token that is a NUL", "tokenizer", withTokens(edited(5, "\0")));
  meta("token that cuts to another at its NUL", "tokenizer", withTokens(edited(7, `${tokens[6]}\0x`)));
  meta("empty token", "tokenizer", withTokens(edited(5, "")));
  meta("empty token colliding with [EMPTY_5]", "tokenizer", withTokens(edited(6, "[EMPTY_5]").map((t, j) => (j === 5 ? "" : t))));
  meta("no tokens", "tokenizer", withTokens([]));
  meta("one token", "tokenizer", withTokens(["a"]));
  meta("tokens as int32 array", "tokenizer", setKey(md, "tokenizer.ggml.tokens", i32s(1, 2, 3)));
  meta("tokens as string", "tokenizer", setKey(md, "tokenizer.ggml.tokens", str("abc")));
  meta("tokens missing", "tokenizer", setKey(md, "tokenizer.ggml.tokens", undefined));
  meta("a 1 MB token", "tokenizer", withTokens(edited(5, "x".repeat(1 << 20))));
  const n = tokens.length;
  meta("scores too short", "tokenizer", setKey(md, "tokenizer.ggml.scores", { type: "array", itemType: "float32", value: new Float32Array(10) }));
  meta("scores as strings", "tokenizer", setKey(md, "tokenizer.ggml.scores", { type: "array", itemType: "string", value: ["1"] }));
  meta("scores NaN", "tokenizer", setKey(md, "tokenizer.ggml.scores", { type: "array", itemType: "float32", value: new Float32Array(n).fill(NaN) }));
  const types = (md.find(([k]) => k === "tokenizer.ggml.token_type")![1] as { value: Int32Array }).value;
  meta("token types too short", "tokenizer", setKey(md, "tokenizer.ggml.token_type", i32s(1, 1)));
  meta("token types as uint8", "tokenizer", setKey(md, "tokenizer.ggml.token_type", { type: "array", itemType: "uint8", value: new Uint8Array(n).fill(1) }));
  for (const v of [99, -1, 0, 6]) meta(`token type ${v} everywhere`, "tokenizer", setKey(md, "tokenizer.ggml.token_type", { type: "array", itemType: "int32", value: new Int32Array(n).fill(v) }));
  meta("all tokens control", "tokenizer", setKey(md, "tokenizer.ggml.token_type", { type: "array", itemType: "int32", value: new Int32Array(n).fill(3) }));
  meta("the control tokens typed normal", "tokenizer", setKey(md, "tokenizer.ggml.token_type", { type: "array", itemType: "int32", value: Int32Array.from(types, (t) => (t === 3 ? 1 : t)) }));
  const merges = (md.find(([k]) => k === "tokenizer.ggml.merges")![1] as { value: string[] }).value;
  const withMerges = (m: string[] | undefined): Md => setKey(md, "tokenizer.ggml.merges", m === undefined ? undefined : { type: "array", itemType: "string", value: m });
  meta("merges missing", "tokenizer", withMerges(undefined));
  meta("merges empty", "tokenizer", withMerges([]));
  meta("merges as int32", "tokenizer", setKey(md, "tokenizer.ggml.merges", i32s(1)));
  for (const bad of ["abc", " a", "a ", "", " ", "a  b", "\0 a"]) meta(`merge ${JSON.stringify(bad)}`, "tokenizer", withMerges([bad, ...merges]));
  meta("merges of unknown tokens", "tokenizer", withMerges(["zz qq", "qq zz", ...merges]));
  for (const [key, v] of [
    ["tokenizer.ggml.bos_token_id", u32(1_000_000)],
    ["tokenizer.ggml.eos_token_id", u32(2 ** 32 - 1)],
    ["tokenizer.ggml.eos_token_id", str("0")],
    ["tokenizer.ggml.padding_token_id", u32(n)],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: true } as GgufValue],
    ["tokenizer.ggml.add_eos_token", { type: "bool", value: true } as GgufValue],
    ["tokenizer.ggml.add_bos_token", u32(1)],
  ] as [string, GgufValue][])
    meta(`${key} = ${String(v.value)}`, "tokenizer", setKey(md, key, v));
  meta("add_bos_token without a bos token", "tokenizer", setKey(setKey(md, "tokenizer.ggml.bos_token_id", u32(1_000_000)), "tokenizer.ggml.add_bos_token", { type: "bool", value: true }));
  meta("add_eos_token without an eos token", "tokenizer", setKey(setKey(md, "tokenizer.ggml.eos_token_id", u32(1_000_000)), "tokenizer.ggml.add_eos_token", { type: "bool", value: true }));
  for (const model of ["llama", "bert", "t5", "rwkv", "plamo2", "bogus", "", "none"]) meta(`tokenizer model ${JSON.stringify(model)}`, "tokenizer", setKey(md, "tokenizer.ggml.model", str(model)));
  for (const pre of ["bogus", "", "llama3", "default"]) meta(`pre-tokenizer ${JSON.stringify(pre)}`, "tokenizer", setKey(md, "tokenizer.ggml.pre", str(pre)));

  // ---- tensors --------------------------------------------------------------------------------
  const T = base.tensors;
  const edit = (name: string, f: (t: RawTensor) => RawTensor): RawTensor[] => T.map((t) => (t.name === name ? f(t) : t));
  for (const target of ["token_embd.weight", "blk.0.attn_q.weight", "output_norm.weight", "blk.1.attn_k.bias"]) {
    const t = T.find((x) => x.name === target)!;
    const d = t.dims.map(Number);
    const cases: [string, RawTensor[]][] = [
      ["dim 0", edit(target, (x) => ({ ...x, dims: d.map((v, i) => (i === 0 ? 0 : v)) }))],
      ["last dim 0", edit(target, (x) => ({ ...x, dims: d.map((v, i) => (i === d.length - 1 ? 0 : v)) }))],
      ["no dims", edit(target, (x) => ({ ...x, dims: [] }))],
      ["5 dims", edit(target, (x) => ({ ...x, dims: [...d, 1, 1, 1, 1].slice(0, 5) }))],
      ["dims 2^40", edit(target, (x) => ({ ...x, dims: d.map((v, i) => (i === 0 ? 2 ** 40 : v)) }))],
      ["dims 2^63", edit(target, (x) => ({ ...x, dims: [1n << 63n, ...d.slice(1)] }))],
      ["dims overflowing together", edit(target, (x) => ({ ...x, dims: [2 ** 32, 2 ** 32, 2 ** 32, 1] }))],
      ["one element short", edit(target, (x) => ({ ...x, dims: d.map((v, i) => (i === 0 ? v - 1 : v)) }))],
      ["transposed", edit(target, (x) => ({ ...x, dims: [...d].reverse() }))],
      ["type 4 (removed)", edit(target, (x) => ({ ...x, type: 4 }))],
      ["type 31 (removed)", edit(target, (x) => ({ ...x, type: 31 }))],
      ["type 43 (past the last)", edit(target, (x) => ({ ...x, type: 43 }))],
      ["type 2^32-1", edit(target, (x) => ({ ...x, type: 0xffffffff }))],
      ["type F16 with F32 data", edit(target, (x) => ({ ...x, type: 1 }))],
      ["type Q4_0", edit(target, (x) => ({ ...x, type: 2 }))],
      ["offset misaligned", edit(target, (x) => ({ ...x, offset: 1 }))],
      ["offset past the end", edit(target, (x) => ({ ...x, offset: 1 << 30 }))],
      ["offset 2^63", edit(target, (x) => ({ ...x, offset: 1n << 63n }))],
      ["offset overlapping the first tensor", edit(target, (x) => ({ ...x, offset: 0 }))],
      ["name empty", edit(target, (x) => ({ ...x, name: "" }))],
      ["name of 64 bytes", edit(target, (x) => ({ ...x, name: "x".repeat(64) }))],
      ["name duplicated", edit(target, (x) => ({ ...x, name: T[0]!.name === target ? T[1]!.name : T[0]!.name }))],
      ["missing", T.filter((x) => x.name !== target)],
    ];
    for (const [what, tensors] of cases) tens(`${target}: ${what}`, tensors);
  }
  tens("an extra unknown tensor", [...T, { name: "fuzz.extra", dims: [4], type: 0, data: new Uint8Array(16) }]);
  tens("a layer 2 tensor in a 2-layer model", [...T, { ...T.find((x) => x.name === "blk.1.attn_norm.weight")!, name: "blk.2.attn_norm.weight" }]);
  tens("no tensors", []);
  tens("tensors reversed", [...T].reverse());
  return out;
}
