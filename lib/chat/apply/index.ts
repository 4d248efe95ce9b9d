/**
 * `applyChatTemplate(source, request)`: an OpenAI-style request and a chat template in, a `ChatPlan`
 * out (prompt, output parser, its GBNF, triggers, stops...). Follows llama.cpp's
 * `common_chat_templates_apply` (jinja path): specialized formats first, detected from the template
 * source, else the template analysis feeds the parser generator. See docs/apply.md.
 */
import { LlamapegError } from "../../errors.js";
import { analyzeTemplate } from "../analysis/analyze.js";
import { detectSpecializedTemplate } from "../template/chat-context.js";
import { patchTemplateSource } from "../template/source-patches.js";
import { applyWithAnalysis } from "./autoparser.js";
import { renderPrompts, withPromptSegments } from "./plan-parts.js";
import { normalizeApplyRequest, type ApplyChatRequest, type NormalizedApplyRequest } from "./request.js";
import { SPECIALIZED_HANDLERS } from "./specialized/index.js";
import type { AppliedChatPlan } from "./types.js";

export type { ApplyChatRequest, ReasoningFormat } from "./request.js";
export type { AppliedChatPlan } from "./types.js";

/**
 * Marks plans whose grammar forces a call (tool_choice "required", tools, no response schema), so
 * that a finished output without one is a parse failure rather than an answer.
 */
function withRequiredCalls(plan: AppliedChatPlan, req: NormalizedApplyRequest): AppliedChatPlan {
  plan.toolCallsRequired = req.toolChoice === "required" && (req.tools?.length ?? 0) > 0 && req.jsonSchema === null && plan.grammar !== "";
  return plan;
}

/**
 * Builds the plan for one request. Throws `LlamapegError`: `ERR_INVALID_REQUEST` (a malformed
 * request, or a grammar together with tools; `where` names the field), `ERR_TEMPLATE_RENDER` (the
 * template has a syntax error or raises), `ERR_TEMPLATE_ANALYSIS` (the template cannot be analysed).
 */
export function applyChatTemplate(source: string, request: ApplyChatRequest): AppliedChatPlan {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "applyChatTemplate: the template source must be a string", { where: "source" });
  const req = normalizeApplyRequest(request);
  try {
    const kind = detectSpecializedTemplate(patchTemplateSource(source));
    const handler = kind !== undefined ? SPECIALIZED_HANDLERS[kind] : undefined;
    // Analysis overrides always go through the analysis, even for a specialized template.
    if (handler !== undefined && req.analysisOverrides === undefined) return withRequiredCalls(withPromptSegments(() => handler(source, req)), req);
    // Render first: a template that does not render fails with its render error, not a probe's.
    const prompts = renderPrompts(source, req);
    const analysis = analyzeTemplate(source, {
      bosToken: req.bosToken,
      eosToken: req.eosToken,
      ...(req.analysisOverrides !== undefined ? { overrides: req.analysisOverrides } : {}),
    });
    return withRequiredCalls({ ...applyWithAnalysis(source, req, analysis, prompts), promptSegments: prompts.promptSegments }, req);
  } catch (e) {
    if (e instanceof LlamapegError) throw e;
    throw new LlamapegError("ERR_INTERNAL", `applyChatTemplate failed unexpectedly: ${(e as Error)?.message ?? String(e)}`, { where: "applyChatTemplate" });
  }
}
