/**
 * LFM2 / LFM2.5: `<think>` reasoning (when the template knows it), content, then
 * `<|tool_call_start|>[name(k="v", n=1)]<|tool_call_end|>` (Python-style calls, JSON literals
 * allowed). LFM2 also preserves its tool-list tokens. As `common_chat_params_init_lfm2`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { pythonStyleToolCalls } from "../../grammar/python-tools.js";
import { toolFunctions } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const CALL_START = "<|tool_call_start|>";
const CALL_END = "<|tool_call_end|>";
const GEN_PROMPT = "<|im_start|>assistant\n";

function applyLfm2Family(source: string, req: NormalizedApplyRequest, toolListTokens: boolean): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const hasTools = toolFunctions(req.tools ?? []).length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const extractReasoning = req.reasoningFormat !== "none" && source.includes("<think>");
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const gen = p.literal(GEN_PROMPT);
    const end = p.end();
    let reasoning = p.eps();
    if (extractReasoning) reasoning = p.optional(p.cat("<think>", () => p.reasoning(p.until("</think>")), "</think>"));
    if (!hasTools || req.toolChoice === "none") {
      if (hasResponseFormat) return p.cat(gen, reasoning, () => p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)), end);
      return p.cat(gen, reasoning, () => p.content(p.rest()), end);
    }
    const toolCalls = p.rule(
      "tool-calls",
      p.triggerRule(
        "tool-call",
        p.cat(
          () => p.literal(CALL_START),
          () => pythonStyleToolCalls(p, { tools: req.tools ?? [], parallel: req.parallelToolCalls, allowJsonLiterals: true }),
          () => p.literal(CALL_END),
        ),
      ),
    );
    const content = p.content(p.until(CALL_START));
    return p.cat(gen, reasoning, content, toolCalls, end);
  });

  const grammarLazy = includeGrammar && !(hasResponseFormat || (hasTools && req.toolChoice === "required"));
  const preserved = [CALL_START, CALL_END, "<think>", "</think>"];
  if (toolListTokens) preserved.push("<|tool_list_start|>", "<|tool_list_end|>");
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word(CALL_START)] : [],
    preservedTokens: preserved,
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "<think>",
    thinkingEndTags: ["</think>"],
    parser,
  };
}

export const applyLfm2 = (source: string, req: NormalizedApplyRequest): AppliedChatPlan => applyLfm2Family(source, req, true);
export const applyLfm25 = (source: string, req: NormalizedApplyRequest): AppliedChatPlan => applyLfm2Family(source, req, false);
