/**
 * Kimi K3 (XTML tags `<|open|>T attrs<|sep|>` ... `<|close|>T<|sep|>`): an optional think section,
 * a response section, then a tools section of `<|open|>call tool="NAME" index="N"<|sep|>` with one
 * `<|open|>argument key="K" type="..."<|sep|>v<|close|>argument<|sep|>` per argument (string-typed
 * values raw, others as written). As `common_chat_params_init_kimi_k3`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolProperties } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const SEP = "<|sep|>";
const MSG_START = '<|open|>message role="assistant"<|sep|>';
const THINK_START = "<|open|>think<|sep|>";
const THINK_END = "<|close|>think<|sep|>";
const RESP_START = "<|open|>response<|sep|>";
const RESP_END = "<|close|>response<|sep|>";
const TOOLS_START = "<|open|>tools<|sep|>";
const TOOLS_END = "<|close|>tools<|sep|>";
const CALL_START = '<|open|>call tool="';
const CALL_END = "<|close|>call<|sep|>";
const ARG_START = '<|open|>argument key="';
const ARG_END = "<|close|>argument<|sep|>";
const MSG_END = "<|close|>message<|sep|>";
const EOM = "<|end_of_msg|>";

export function applyKimiK3(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const useTools = fns.length > 0 && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    const end = p.end();
    const start = p.optional(p.literal(MSG_START));
    // the think section is always consumed (the prompt opens it); extraction decides where it goes
    const thinkBody = req.reasoningFormat !== "none" ? p.reasoning(p.untilOneOf([THINK_END, RESP_START])) : p.content(p.untilOneOf([THINK_END, RESP_START]));
    const reasoning = p.optional(p.cat(() => p.optional(p.literal(THINK_START)), thinkBody, () => p.optional(p.literal(THINK_END))));
    const response = p.cat(() => p.optional(p.literal(RESP_START)), () => p.content(p.untilOneOf([RESP_END, TOOLS_START, MSG_END])), () => p.optional(p.literal(RESP_END)));
    const trailer = p.cat(() => p.optional(p.literal(MSG_END)), () => p.optional(p.literal(EOM)));
    if (!useTools) return p.cat(start, reasoning, response, trailer, end);

    let choices = p.choice();
    for (const fn of fns) {
      let args = p.eps();
      const props = toolProperties(fn);
      if (props.length > 0) {
        let argChoices = p.choice();
        for (const [key, schema] of props) {
          const type = typeof schema === "object" && schema !== null && typeof schema.type === "string" ? schema.type : "string";
          const value = type === "string" ? p.toolArgStringValue(p.until(ARG_END)) : p.toolArgValue(p.until(ARG_END));
          // the trailing type="..." attribute is skipped: anything up to <|sep|>
          const arg = p.toolArg(
            p.cat(
              () => p.toolArgOpen(p.literal(ARG_START)),
              () => p.toolArgName(p.literal(key)),
              () => p.literal('"'),
              () => p.until(SEP),
              () => p.literal(SEP),
              value,
              () => p.toolArgClose(p.literal(ARG_END)),
            ),
          );
          argChoices = argChoices.or(p.rule(`kimi-k3-arg-${fn.name}-${key}`, arg));
        }
        args = p.zeroOrMore(argChoices);
      }
      const call = p.tool(
        p.cat(
          () => p.toolOpen(p.cat(() => p.literal(CALL_START), () => p.toolName(p.literal(fn.name)), () => p.literal('"'), () => p.until(SEP), () => p.literal(SEP))),
          () => p.toolArgs(args),
          () => p.toolClose(p.literal(CALL_END)),
        ),
      );
      choices = choices.or(p.rule(`kimi-k3-tool-${fn.name}`, call));
    }
    // the message closer belongs to the trigger rule, or the lazy grammar would reject it
    const section = p.triggerRule(
      "kimi-k3-tool-call",
      p.cat(() => p.literal(TOOLS_START), () => p.oneOrMore(choices), () => p.literal(TOOLS_END), () => p.optional(p.literal(MSG_END)), () => p.optional(p.literal(EOM))),
    );
    const tools = req.toolChoice === "required" ? section : p.optional(section);
    return p.cat(start, reasoning, response, tools, trailer, end);
  });

  const grammarLazy = useTools && req.toolChoice !== "required";
  return {
    prompt,
    format: "peg-native",
    grammar: useTools ? planGrammar(parser, req, grammarLazy, false) : req.grammar,
    grammarLazy,
    grammarTriggers: useTools ? [word(TOOLS_START)] : [],
    preservedTokens: ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: THINK_START,
    thinkingEndTags: [THINK_END],
    parser,
  };
}
