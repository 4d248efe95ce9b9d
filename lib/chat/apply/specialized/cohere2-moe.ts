/**
 * Cohere2 MoE / North Code: the prompt opens `<|START_THINKING|>`; reasoning up to
 * `<|END_THINKING|>`, then either `<|START_TEXT|>content<|END_TEXT|>` or
 * `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}}]<|END_ACTION|>`
 * (never both). As `common_chat_params_init_cohere2moe`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { standardJsonTools } from "../../grammar/json-tools.js";
import { toolFunctions } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

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

export function applyCohere2Moe(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const hasTools = toolFunctions(req.tools ?? []).length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const gen = p.literal(TURN_START + CHATBOT);
    const end = p.end();
    let reasoning = p.eps();
    const thinking = () => p.untilOneOf([THINK_END, TEXT_START, ACTION_START]);
    if (req.reasoningFormat !== "none") {
      reasoning = p.optional(p.cat(() => p.literal(THINK_START), () => p.reasoning(thinking()), () => p.optional(p.literal(THINK_END))));
    } else {
      // not extracting: the whole thinking block, markers included, stays in the content
      reasoning = p.optional(p.content(p.cat(() => p.literal(THINK_START), thinking, () => p.optional(p.literal(THINK_END)))));
    }
    const text = p.cat(
      () => p.literal(TEXT_START),
      () => (hasResponseFormat ? p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)) : p.content(p.until(TEXT_END))),
      () => p.optional(p.literal(TEXT_END)),
    );
    if (!hasTools || req.toolChoice === "none") return p.cat(gen, reasoning, text, () => p.optional(p.literal(TURN_END)), end);
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
    // content and calls exclude each other in this format
    const body = req.toolChoice === "required" ? calls : p.choice([calls, text]);
    return p.cat(gen, reasoning, body, () => p.optional(p.literal(TURN_END)), end);
  });

  const grammarLazy = includeGrammar && !hasResponseFormat && req.toolChoice === "auto";
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word(ACTION_START)] : [],
    preservedTokens: [...PRESERVED],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: THINK_START,
    thinkingEndTags: [THINK_END],
    parser,
  };
}
