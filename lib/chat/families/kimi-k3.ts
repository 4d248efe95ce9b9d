/**
 * Kimi K3 (XTML tags `<|open|>T attrs<|sep|>` ... `<|close|>T<|sep|>`): an optional think section,
 * a response section, then a tools section of `<|open|>call tool="NAME" index="N"<|sep|>` with one
 * `<|open|>argument key="K" type="..."<|sep|>v<|close|>argument<|sep|>` per argument (string-typed
 * values raw, others as written). As `common_chat_params_init_kimi_k3`.
 */
import { toolProperties } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

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

export const kimiK3: ChatFamily = {
  name: "kimi-k3",
  detect: (src) => src.includes("<|open|>") && src.includes("<|close|>") && src.includes("<|end_of_msg|>"),

  plan({ req }) {
    const { fns, useTools, required, extractReasoning } = shapeOf(req);
    return familyPlan({
      build(p) {
        const end = p.end();
        const start = p.optional(p.literal(MSG_START));
        // the think section is always consumed (the prompt opens it); extraction decides where it goes
        const thinkBody = extractReasoning ? p.reasoning(p.untilOneOf([THINK_END, RESP_START])) : p.content(p.untilOneOf([THINK_END, RESP_START]));
        const reasoning = p.optional(p.seq(p.optional(p.literal(THINK_START)), thinkBody, p.optional(p.literal(THINK_END))));
        const response = p.seq(p.optional(p.literal(RESP_START)), p.content(p.untilOneOf([RESP_END, TOOLS_START, MSG_END])), p.optional(p.literal(RESP_END)));
        const trailer = p.seq(p.optional(p.literal(MSG_END)), p.optional(p.literal(EOM)));
        if (!useTools) return { root: p.seq(start, reasoning, response, trailer, end) };

        const choices = toolChoice(
          p,
          fns,
          (fn) => {
            const props = toolProperties(fn);
            let args = p.eps();
            if (props.length > 0) {
              const argChoices = p.choice(
                props.map(([key, schema]) => {
                  const type = typeof schema === "object" && schema !== null && typeof schema.type === "string" ? schema.type : "string";
                  const value = type === "string" ? p.toolArgStringValue(p.until(ARG_END)) : p.toolArgValue(p.until(ARG_END));
                  // The trailing type="..." attribute is skipped: anything up to <|sep|>. Beyond the
                  // reference (whose grammar text reference mode keeps): the name shows with its
                  // closing quote only (atomic), so of keys `a` and `ab`, `key="a` at the end of a
                  // stream does not stream as `a` and then turn into `ab`.
                  const arg = req.referenceMode
                    ? p.toolArg(p.seq(p.toolArgOpen(p.literal(ARG_START)), p.toolArgName(p.literal(key)), '"', p.until(SEP), SEP, value, p.toolArgClose(p.literal(ARG_END))))
                    : p.toolArg(p.seq(p.toolArgOpen(p.literal(ARG_START)), p.atomic(p.seq(p.toolArgName(p.literal(key)), '"')), p.until(SEP), SEP, value, p.toolArgClose(p.literal(ARG_END))));
                  return p.rule(`kimi-k3-arg-${fn.name}-${key}`, arg);
                }),
              );
              args = p.zeroOrMore(argChoices);
            }
            return p.tool(p.seq(p.toolOpen(p.seq(CALL_START, p.toolName(p.literal(fn.name)), '"', p.until(SEP), SEP)), p.toolArgs(args), p.toolClose(p.literal(CALL_END))));
          },
          (fn) => `kimi-k3-tool-${fn.name}`,
        );
        // the message closer belongs to the trigger rule, or the lazy grammar would reject it
        const section = p.triggerRule("kimi-k3-tool-call", p.seq(TOOLS_START, p.oneOrMore(choices), TOOLS_END, p.optional(p.literal(MSG_END)), p.optional(p.literal(EOM))));
        const tools = required ? section : p.optional(section);
        // Calls only still lets the model write the empty response section the template renders
        // before every tools section (and the model was trained on): skipping it would force an
        // output the model never saw. The reference's required grammar admits content there.
        const emptyResponse = p.optional(p.seq(p.literal(RESP_START), p.literal(RESP_END)));
        return { root: p.seq(start, reasoning, response, tools, trailer, end), callsOnly: p.seq(start, reasoning, emptyResponse, section, trailer, end) };
      },
      grammar: grammarMode(useTools, !required),
      triggers: useTools ? [word(TOOLS_START)] : [],
      preservedTokens: ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"],
      thinkingStartTag: THINK_START,
      thinkingEndTags: [THINK_END],
      supportsResponseFormat: false,
    });
  },
};
