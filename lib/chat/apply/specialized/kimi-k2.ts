/**
 * Kimi K2 (Instruct and Thinking): `<think>` reasoning, then content, then
 * `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>`.
 * The id the model writes (`functions.NAME:IDX`) is the call id. As `common_chat_params_init_kimi_k2`:
 * reasoning may end at a call without `</think>`, the section markers and the call end are optional,
 * and a JSON-schema response format is not enforced (the reference ignores it for this family).
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const SECTION_BEGIN = "<|tool_calls_section_begin|>";
const SECTION_END = "<|tool_calls_section_end|>";
const CALL_BEGIN = "<|tool_call_begin|>";
const ARGS_BEGIN = "<|tool_call_argument_begin|>";
const CALL_END = "<|tool_call_end|>";
const GEN_PROMPT = "<|im_assistant|>assistant<|im_middle|>";

export function applyKimiK2(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const useTools = hasTools && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    const end = p.end();
    const reasoning =
      req.reasoningFormat !== "none"
        ? p.optional(p.cat("<think>", () => p.reasoning(p.untilOneOf(["</think>", SECTION_BEGIN, CALL_BEGIN])), () => p.optional(p.literal("</think>"))))
        : p.eps();
    const gen = p.literal(GEN_PROMPT);
    if (!useTools) return p.cat(gen, reasoning, () => p.content(p.rest()), end);

    let choice = p.choice();
    for (const fn of fns) {
      const id = p.toolId(p.cat(() => p.literal("functions."), () => p.toolName(p.literal(fn.name)), () => p.literal(":"), () => p.chars("[0-9]", 1, -1)));
      const call = p.tool(
        p.cat(
          () => p.toolOpen(p.cat(id, () => p.literal(ARGS_BEGIN))),
          () => p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))),
          () => p.toolClose(p.optional(p.literal(CALL_END))),
        ),
      );
      choice = choice.or(p.rule(`tool-${fn.name}`, call));
    }
    const min = req.toolChoice === "required" ? 1 : 0;
    const max = req.parallelToolCalls ? -1 : 1;
    const toolCalls = p.rule(
      "tool-calls",
      p.cat(
        () => p.optional(p.literal(SECTION_BEGIN)),
        () => p.triggerRule("tool-call", p.cat(() => p.repeat(p.cat(CALL_BEGIN, choice), min, max), () => p.optional(p.literal(SECTION_END)))),
      ),
    );
    const contentBefore = p.content(p.untilOneOf([SECTION_BEGIN, CALL_BEGIN]));
    return p.cat(gen, reasoning, contentBefore, toolCalls, end);
  });

  const grammarLazy = useTools && req.toolChoice === "auto";
  return {
    prompt,
    format: "peg-native",
    grammar: useTools ? planGrammar(parser, req, grammarLazy, false) : req.grammar,
    grammarLazy,
    grammarTriggers: useTools ? [word(CALL_BEGIN)] : [],
    preservedTokens: [SECTION_BEGIN, SECTION_END, CALL_BEGIN, ARGS_BEGIN, CALL_END, "<think>", "</think>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "<think>",
    thinkingEndTags: ["</think>"],
    parser,
  };
}
