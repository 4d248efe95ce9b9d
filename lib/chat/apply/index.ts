/**
 * `applyChatTemplate(source, request)`: an OpenAI-style request and a chat template in, the whole
 * `ChatPlan` out (prompt, output parser, its GBNF, triggers, prefill, stops...), with no model.
 * Follows llama.cpp's `common_chat_templates_apply` (jinja path): a model family's own plan when
 * the template source is one (families/), else the template analysis feeds the parser generator;
 * on top, what llama.cpp leaves to its server or does not do (named tool_choice, calls only, tools
 * together with a response schema, schema degradation). See docs/apply.md.
 */
import { LlamapegError, internalError } from "../../errors.js";
import { buildPlan } from "./build.js";
import { normalizeApplyRequest, type ApplyChatRequest, type NormalizedApplyRequest } from "./request.js";
import type { AppliedChatPlan } from "./types.js";

export type { ApplyChatRequest, NormalizedApplyRequest, ReasoningFormat, ResponseFormat, ToolChoice } from "./request.js";
export type { AppliedChatPlan } from "./types.js";
export { normalizeApplyRequest } from "./request.js";

/**
 * Builds the plan for one request. Throws `LlamapegError`: `ERR_INVALID_REQUEST` (a malformed
 * request, or a grammar together with tools; `where` names the field), `ERR_TEMPLATE_RENDER` (the
 * template has a syntax error or raises), `ERR_TEMPLATE_ANALYSIS` (the template cannot be analysed).
 */
export function applyChatTemplate(source: string, request: ApplyChatRequest): AppliedChatPlan {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", "applyChatTemplate: the template source must be a string", { where: "source" });
  return applyNormalized(source, normalizeApplyRequest(request));
}

/** `applyChatTemplate` for a request already checked by `normalizeApplyRequest`. */
export function applyNormalized(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  try {
    return buildPlan(source, req);
  } catch (e) {
    // a request or template error as it is; anything else is a bug
    if (e instanceof LlamapegError) throw e;
    throw internalError(`applyChatTemplate failed unexpectedly: ${(e as Error)?.message ?? String(e)}`, "applyChatTemplate");
  }
}
