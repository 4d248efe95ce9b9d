/**
 * The specialized formats llama.cpp builds by hand (`common_chat_params_init_*`), keyed by the kind
 * `detectSpecializedTemplate` finds. A kind without a handler here falls back to the analysis path
 * (documented in docs/apply.md).
 */
import type { SpecializedKind } from "../../template/chat-context.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";
import { applyCohere2Moe } from "./cohere2-moe.js";
import { applyDeepseekV32 } from "./deepseek-v3-2.js";
import { applyFunctionaryV32 } from "./functionary-v3-2.js";
import { applyGemma4 } from "./gemma4.js";
import { applyGigachatV3 } from "./gigachat-v3.js";
import { applyGptOss } from "./gpt-oss.js";
import { applyKimiK2 } from "./kimi-k2.js";
import { applyKimiK3 } from "./kimi-k3.js";
import { applyLfm2, applyLfm25 } from "./lfm2.js";
import { applyMinicpm5 } from "./minicpm5.js";
import { applyMinimaxM3 } from "./minimax-m3.js";
import { applyMinistral3 } from "./ministral-3.js";
import { applyMuseGlimmer } from "./muse-glimmer.js";
import { applyQwen3Coder } from "./qwen3-coder.js";

export type SpecializedHandler = (source: string, req: NormalizedApplyRequest) => AppliedChatPlan;

export const SPECIALIZED_HANDLERS: Partial<Record<SpecializedKind, SpecializedHandler>> = {
  "ministral-3": applyMinistral3,
  "gpt-oss": applyGptOss,
  "muse-glimmer": applyMuseGlimmer,
  "functionary-v3.2": applyFunctionaryV32,
  "kimi-k2": applyKimiK2,
  "kimi-k3": applyKimiK3,
  "cohere2-moe": applyCohere2Moe,
  lfm2: applyLfm2,
  "lfm2.5": applyLfm25,
  "gigachat-v3": applyGigachatV3,
  "deepseek-v3.2": applyDeepseekV32,
  "minimax-m3": applyMinimaxM3,
  gemma4: applyGemma4,
  minicpm5: applyMinicpm5,
  "qwen3-coder": applyQwen3Coder,
};
