/**
 * Kimi K2 (Instruct and Thinking): `<think>` reasoning, then content, then
 * `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>`.
 * The id the model writes (`functions.NAME:IDX`) is the call id. As `common_chat_params_init_kimi_k2`:
 * reasoning may end at a call without `</think>`, the section markers and the call end are optional,
 * and a JSON-schema response format is not enforced (the reference ignores it for this family).
 */
import { toolParameters } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { callsAfterReasoning, familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

const SECTION_BEGIN = "<|tool_calls_section_begin|>";
const SECTION_END = "<|tool_calls_section_end|>";
const CALL_BEGIN = "<|tool_call_begin|>";
const ARGS_BEGIN = "<|tool_call_argument_begin|>";
const CALL_END = "<|tool_call_end|>";
const GEN_PROMPT = "<|im_assistant|>assistant<|im_middle|>";

export const kimiK2: ChatFamily = {
  name: "kimi-k2",
  detect: (src) => src.includes("<|tool_calls_section_begin|>") && src.includes("<|tool_call_begin|>"),

  plan({ req }) {
    const { fns, useTools, extractReasoning } = shapeOf(req);
    return familyPlan({
      build(p) {
        const end = p.end();
        const reasoning = extractReasoning
          ? p.optional(p.seq("<think>", p.reasoning(p.untilOneOf(["</think>", SECTION_BEGIN, CALL_BEGIN])), p.optional(p.literal("</think>"))))
          : p.eps();
        const gen = p.literal(GEN_PROMPT);
        if (!useTools) return { root: p.seq(gen, reasoning, p.content(p.rest()), end) };
        const choice = toolChoice(p, fns, (fn) => {
          const id = p.toolId(p.seq("functions.", p.toolName(p.literal(fn.name)), ":", p.chars("[0-9]", 1, -1)));
          return p.tool(p.seq(p.toolOpen(p.seq(id, ARGS_BEGIN)), p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))), p.toolClose(p.optional(p.literal(CALL_END)))));
        });
        const min = req.toolChoice === "required" ? 1 : 0;
        const max = req.parallelToolCalls ? -1 : 1;
        const toolCalls = p.rule(
          "tool-calls",
          p.seq(p.optional(p.literal(SECTION_BEGIN)), p.triggerRule("tool-call", p.seq(p.repeat(p.seq(CALL_BEGIN, choice), min, max), p.optional(p.literal(SECTION_END))))),
        );
        const contentBefore = p.content(p.untilOneOf([SECTION_BEGIN, CALL_BEGIN]));
        return { root: p.seq(gen, reasoning, contentBefore, toolCalls, end), callsOnly: p.seq(gen, callsAfterReasoning(p, reasoning, toolCalls), end) };
      },
      grammar: grammarMode(useTools, req.toolChoice === "auto"),
      triggers: useTools ? [word(CALL_BEGIN)] : [],
      preservedTokens: [SECTION_BEGIN, SECTION_END, CALL_BEGIN, ARGS_BEGIN, CALL_END, "<think>", "</think>"],
      thinkingStartTag: "<think>",
      thinkingEndTags: ["</think>"],
      supportsResponseFormat: false,
    });
  },
};
