/**
 * The generic path: template analysis -> output parser (the chat grammar builders) -> GBNF and
 * triggers, as llama.cpp's `peg_generator::generate_parser` (chat-auto-parser-generator.cpp) and the
 * autoparser branch of `common_chat_templates_apply_jinja`.
 */
import type { TemplateAnalysis } from "../analysis/types.js";
import { buildChatOutputParser } from "../grammar/output-parser.js";
import type { GrammarTrigger } from "../plan.js";
import type { AppliedChatPlan } from "./types.js";
import type { NormalizedApplyRequest } from "./request.js";
import { planGrammar, renderPrompts, trimWs, word, type Prompts } from "./plan-parts.js";

/** What the autoparser's lazy grammar waits for: the section marker, else the per-call marker. */
export function autoparserTriggerMarker(a: TemplateAnalysis): string {
  return a.tools.format.sectionStart !== "" ? a.tools.format.sectionStart : a.tools.format.perCallStart;
}

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

  const hasTools = analysis.tools.format.mode !== "none" && tools.length > 0;
  const trigger = autoparserTriggerMarker(analysis);
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar =
    hasResponseFormat || (hasTools && ((req.toolChoice === "auto" && trigger !== "") || req.toolChoice === "required"));

  let grammar = "";
  let grammarLazy = false;
  const grammarTriggers: GrammarTrigger[] = [];
  if (includeGrammar) {
    grammarLazy = !hasResponseFormat && req.toolChoice === "auto";
    grammar = planGrammar(parser, req, grammarLazy, hasResponseFormat);
    if (grammarLazy) {
      grammarTriggers.push(word(trigger));
      // the model may emit the OpenAI function wrapper instead
      if (analysis.tools.format.openaiWrapperTrigger) grammarTriggers.push(word('{"type": "function",'));
    }
  } else if (req.grammar !== "") {
    grammar = req.grammar;
  }

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
