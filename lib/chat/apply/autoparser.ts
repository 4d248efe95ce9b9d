/**
 * The generic path: template analysis -> output tree (the chat grammar builders) -> grammar mode
 * and triggers, as llama.cpp's `peg_generator::generate_parser` (chat-auto-parser-generator.cpp) and
 * the autoparser branch of `common_chat_templates_apply_jinja`.
 */
import type { TemplateAnalysis } from "../analysis/types.js";
import type { FamilyPlan, PlanInput } from "../families/family.js";
import { grammarMode } from "../families/helpers.js";
import { trimWhitespace } from "../normalize.js";
import { buildChatOutputTree, type ChatOutputRequest } from "../grammar/output-parser.js";
import { chatGrammarMode } from "../grammar/plan-grammar.js";

export function analysisPlan(analysis: TemplateAnalysis, { req, generationPrompt }: PlanInput): FamilyPlan {
  const request: ChatOutputRequest = {
    tools: req.tools ?? [],
    toolChoice: req.toolChoice,
    parallelToolCalls: req.parallelToolCalls,
    jsonSchema: req.jsonSchema,
    extractReasoning: req.reasoningFormat !== "none",
    supportsToolCalls: analysis.caps.supportsToolCalls,
    generationPrompt,
    extended: !req.referenceMode,
  };
  const { include, lazy, triggers } = chatGrammarMode(analysis, request);
  const supportsThinking = analysis.reasoning.mode !== "none";
  const endTag = trimWhitespace(analysis.reasoning.end);
  return {
    format: "peg-native",
    build: (p) => buildChatOutputTree(p, analysis, request),
    grammar: grammarMode(include, lazy),
    triggers,
    preservedTokens: [...analysis.preservedTokens],
    additionalStops: [...analysis.additionalStops],
    thinkingStartTag: supportsThinking ? trimWhitespace(analysis.reasoning.start) : "",
    thinkingEndTags: supportsThinking && endTag !== "" ? [endTag] : [],
  };
}
