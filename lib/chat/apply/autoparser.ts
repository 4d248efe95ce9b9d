/**
 * The generic path: template analysis -> output parser (the chat grammar builders) -> GBNF and
 * triggers, as llama.cpp's `peg_generator::generate_parser` (chat-auto-parser-generator.cpp) and the
 * autoparser branch of `common_chat_templates_apply_jinja`.
 */
import type { TemplateAnalysis } from "../analysis/types.js";
import { buildChatOutputParser } from "../grammar/output-parser.js";
import { buildChatGrammar } from "../grammar/plan-grammar.js";
import type { AppliedChatPlan } from "./types.js";
import type { NormalizedApplyRequest } from "./request.js";
import { renderPrompts, trimWs, type Prompts } from "./plan-parts.js";

export function applyWithAnalysis(source: string, req: NormalizedApplyRequest, analysis: TemplateAnalysis, prompts: Prompts = renderPrompts(source, req)): AppliedChatPlan {
  const { prompt, generationPrompt } = prompts;
  const tools = req.tools ?? [];
  const parser = buildChatOutputParser(analysis, {
    tools,
    toolChoice: req.toolChoice,
    parallelToolCalls: req.parallelToolCalls,
    jsonSchema: req.jsonSchema,
    extractReasoning: req.reasoningFormat !== "none",
    supportsToolCalls: analysis.caps.supportsToolCalls,
    generationPrompt,
  });

  // The grammar step is shared with `buildChatGrammar`; a user grammar applies only when it emits none.
  const { grammar: planned, grammarLazy, grammarTriggers } = buildChatGrammar(parser, analysis, {
    tools,
    toolChoice: req.toolChoice,
    jsonSchema: req.jsonSchema,
  });
  const grammar = planned !== "" ? planned : req.grammar;

  const supportsThinking = analysis.reasoning.mode !== "none";
  const endTag = trimWs(analysis.reasoning.end);
  return {
    prompt,
    format: "peg-native",
    grammar,
    grammarLazy,
    grammarTriggers,
    preservedTokens: [...analysis.preservedTokens],
    additionalStops: [...analysis.additionalStops],
    generationPrompt,
    thinkingStartTag: supportsThinking ? trimWs(analysis.reasoning.start) : "",
    thinkingEndTags: supportsThinking && endTag !== "" ? [endTag] : [],
    parser,
  };
}
