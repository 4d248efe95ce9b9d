/**
 * Cohere2 MoE / North Code: the prompt opens `<|START_THINKING|>`; reasoning up to
 * `<|END_THINKING|>`, then either `<|START_TEXT|>content<|END_TEXT|>` or
 * `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}}]<|END_ACTION|>`
 * (never both). As `common_chat_params_init_cohere2moe`.
 */
import { standardJsonTools } from "../grammar/json-tools.js";
import type { ChatFamily } from "./family.js";
import { familyPlan, grammarMode, shapeOf, word } from "./helpers.js";

const TURN_START = "<|START_OF_TURN_TOKEN|>";
const TURN_END = "<|END_OF_TURN_TOKEN|>";
const CHATBOT = "<|CHATBOT_TOKEN|>";
const THINK_START = "<|START_THINKING|>";
const THINK_END = "<|END_THINKING|>";
const TEXT_START = "<|START_TEXT|>";
const TEXT_END = "<|END_TEXT|>";
const ACTION_START = "<|START_ACTION|>";
const ACTION_END = "<|END_ACTION|>";
const PRESERVED = [
  TURN_START, TURN_END, CHATBOT, "<|USER_TOKEN|>", "<|SYSTEM_TOKEN|>",
  THINK_START, THINK_END, TEXT_START, TEXT_END, ACTION_START, ACTION_END,
  "<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>",
];

export const cohere2Moe: ChatFamily = {
  name: "cohere2-moe",
  detect: (src) => src.includes("<|START_TEXT|>") && src.includes("<|START_ACTION|>"),

  plan({ req }) {
    const { useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      build(p) {
        const gen = p.literal(TURN_START + CHATBOT);
        const end = p.end();
        const thinking = () => p.untilOneOf([THINK_END, TEXT_START, ACTION_START]);
        const reasoning = extractReasoning
          ? p.optional(p.seq(THINK_START, p.reasoning(thinking()), p.optional(p.literal(THINK_END))))
          : // not extracting: the whole thinking block, markers included, stays in the content
            p.optional(p.content(p.seq(THINK_START, thinking(), p.optional(p.literal(THINK_END)))));
        const text = p.seq(
          TEXT_START,
          hasResponseFormat ? p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)) : p.content(p.until(TEXT_END)),
          p.optional(p.literal(TEXT_END)),
        );
        if (!useTools) return { root: p.seq(gen, reasoning, text, p.optional(p.literal(TURN_END)), end) };
        const calls = standardJsonTools(p, {
          sectionStart: ACTION_START,
          sectionEnd: ACTION_END,
          tools: req.tools ?? [],
          parallel: req.parallelToolCalls,
          force: true,
          nameKey: "tool_name",
          argsKey: "parameters",
          arrayWrapped: true,
          functionIsKey: false,
          callIdKey: "",
          genCallIdKey: "tool_call_id",
          parametersOrder: ["tool_call_id", "tool_name", "parameters"],
        });
        // content and calls exclude each other in this syntax
        const callsOnly = p.seq(gen, reasoning, calls, p.optional(p.literal(TURN_END)), end);
        if (required) return { root: callsOnly, callsOnly };
        return { root: p.seq(gen, reasoning, p.choice([calls, text]), p.optional(p.literal(TURN_END)), end), callsOnly };
      },
      grammar: grammarMode(include, !hasResponseFormat && req.toolChoice === "auto"),
      triggers: include ? [word(ACTION_START)] : [],
      preservedTokens: [...PRESERVED],
      thinkingStartTag: THINK_START,
      thinkingEndTags: [THINK_END],
    });
  },
};
