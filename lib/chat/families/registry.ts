/**
 * Every model family, in the reference's detection order (`common_chat_try_specialized_template`):
 * the first whose `detect` matches a template source handles it. A template no family claims goes
 * through the template analysis (`../analysis/`).
 */
import { cohere2Moe } from "./cohere2-moe.js";
import { deepseekV32 } from "./deepseek-v3-2.js";
import type { ChatFamily, FamilyName, FamilyAstView } from "./family.js";
import { functionaryV32 } from "./functionary-v3-2.js";
import { gemma4 } from "./gemma4.js";
import { gigachatV3 } from "./gigachat-v3.js";
import { gptOss } from "./gpt-oss.js";
import { kimiK2 } from "./kimi-k2.js";
import { kimiK3 } from "./kimi-k3.js";
import { lfm2, lfm25 } from "./lfm2.js";
import { minicpm5 } from "./minicpm5.js";
import { minimaxM3 } from "./minimax-m3.js";
import { ministral3 } from "./ministral-3.js";
import { museGlimmer } from "./muse-glimmer.js";
import { qwen3Coder } from "./qwen3-coder.js";
import type { AssistantMessage } from "../messages.js";

export const FAMILIES: readonly ChatFamily[] = [
  ministral3,
  gptOss,
  museGlimmer,
  functionaryV32,
  kimiK2,
  kimiK3,
  cohere2Moe,
  lfm2,
  lfm25,
  gigachatV3,
  minimaxM3,
  deepseekV32,
  gemma4,
  minicpm5,
  qwen3Coder,
];

/** The family that handles a (patched) template source, if any. */
export function detectFamily(source: string): ChatFamily | undefined {
  return FAMILIES.find((f) => f.detect(source));
}

/** The family's name for a template source (undefined: the analysis path). */
export function detectSpecializedTemplate(source: string): FamilyName | undefined {
  return detectFamily(source)?.name;
}

const MAPPERS: ReadonlyMap<string, (ast: FamilyAstView) => AssistantMessage> = new Map(
  FAMILIES.flatMap((f) => (f.mapper !== undefined ? [[f.mapper.format, f.mapper.map] as const] : [])),
);

/** The mapper of a plan's `format` (undefined: the generic tag mapper). */
export function formatMapper(format: string): ((ast: FamilyAstView) => AssistantMessage) | undefined {
  return MAPPERS.get(format);
}

export type { ChatFamily, FamilyName, FamilyAstView } from "./family.js";
