/**
 * One line about a model: architecture, parameter count, file type, size. llama.cpp's own
 * description prints "?B" for model sizes it has no name for (every small or new model); the count
 * here comes from the tensors.
 */
import { statSync } from "node:fs";

import { getGgufNumber, getGgufString, type GgufFile } from "../gguf/index.js";

/** llama.cpp's llama_ftype names (llama_ftype_name), by `general.file_type`. */
const FILE_TYPES: Record<number, string> = {
  0: "all F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K - Medium",
  11: "Q3_K - Small", 12: "Q3_K - Medium", 13: "Q3_K - Large", 14: "Q4_K - Small", 15: "Q4_K - Medium",
  16: "Q5_K - Small", 17: "Q5_K - Medium", 18: "Q6_K", 19: "IQ2_XXS - 2.0625 bpw", 20: "IQ2_XS - 2.3125 bpw",
  21: "Q2_K - Small", 22: "IQ3_XS - 3.3 bpw", 23: "IQ3_XXS - 3.0625 bpw", 24: "IQ1_S - 1.5625 bpw",
  25: "IQ4_NL - 4.5 bpw", 26: "IQ3_S - 3.4375 bpw", 27: "IQ3_S mix - 3.66 bpw", 28: "IQ2_S - 2.5 bpw",
  29: "IQ2_M - 2.7 bpw", 30: "IQ4_XS - 4.25 bpw", 31: "IQ1_M - 1.75 bpw", 32: "BF16", 36: "TQ1_0 - 1.69 bpw ternary",
  37: "TQ2_0 - 2.06 bpw ternary", 38: "MXFP4 MoE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
};

export interface ModelFacts {
  architecture: string;
  parameters: number;
  fileType: string;
  sizeBytes: number;
}

/** 19546688 -> "19.5M", 7241732096 -> "7.2B". */
export function formatCount(n: number): string {
  const units: [number, string][] = [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]];
  for (const [size, unit] of units) if (n >= size) return `${(n / size).toFixed(n / size < 100 ? 1 : 0)}${unit}`;
  return String(n);
}

export function formatBytes(n: number): string {
  const units: [number, string][] = [[2 ** 40, "TiB"], [2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]];
  for (const [size, unit] of units) if (n >= size) return `${(n / size).toFixed(1)} ${unit}`;
  return `${n} B`;
}

export function summarizeModel(f: ModelFacts): string {
  return `${f.architecture} · ${formatCount(f.parameters)} parameters · ${f.fileType} · ${formatBytes(f.sizeBytes)}`;
}

/** From a loaded model: llama.cpp's description is "<arch> <size label> <file type>". */
export function loadedModelFacts(m: { description: string; parameters: number; sizeBytes: number }): ModelFacts {
  const [architecture = "?", , ...rest] = m.description.split(" ");
  return { architecture, parameters: m.parameters, fileType: rest.join(" ") || "?", sizeBytes: m.sizeBytes };
}

/** From a GGUF header read in TS (no weights loaded). */
export function ggufModelFacts(file: GgufFile, path: string): ModelFacts {
  let parameters = 0;
  let bytes = 0;
  for (const t of file.tensors) {
    parameters += t.dims.reduce((a, b) => a * b, 1);
    bytes += t.byteLength ?? 0;
  }
  const ftype = getGgufNumber(file, "general.file_type");
  let sizeBytes = bytes;
  if (sizeBytes === 0) {
    try {
      sizeBytes = statSync(path).size;
    } catch {
      sizeBytes = 0;
    }
  }
  return {
    architecture: getGgufString(file, "general.architecture") ?? "?",
    parameters,
    fileType: ftype === undefined ? "?" : (FILE_TYPES[ftype] ?? `file type ${ftype}`),
    sizeBytes,
  };
}
