/**
 * Qwen3-Coder XML calls (also Qwen3.5, Nemotron 3 Nano, StepFun 3.5 Flash):
 * `<tool_call>\n<function=NAME>\n<parameter=K>\nv\n</parameter>\n</function>\n</tool_call>`.
 * As `common_chat_params_init_qwen3_coder`: string-typed parameters are raw text, others JSON; the
 * required parameters in any order; `<think>` reasoning ends at `</think>` or at a call; Qwen3-Coder
 * itself (no `<think>` in the template) may drop the leading `<tool_call>`. Beyond the reference
 * (grammar/argument-values.ts): Python's `True`/`False`/`None` and the declaration order.
 */
import type { PegParser } from "../../peg/builder.js";
import type { GrammarTrigger } from "../plan.js";
import { argumentOrders, argumentValue, pythonLiteralValue } from "../grammar/argument-values.js";
import type { ChatFamily } from "./family.js";
import { callsAfterReasoning, argumentSpecs, familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

const GEN_PREFIX = "<|im_start|>assistant\n";
const PARAM_CLOSE = "\n</parameter>\n";

export const qwen3Coder: ChatFamily = {
  name: "qwen3-coder",
  detect: (src) => src.includes("<tool_call>") && src.includes("<function=") && src.includes("<parameter="),

  plan({ source, req }) {
    const supportsReasoning = source.includes("<think>");
    const isQwen3Coder = !supportsReasoning;
    const { fns, hasTools, useTools, hasResponseFormat, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    const callStarts = ["<tool_call>"];
    // Qwen3-Coder sometimes omits <tool_call>: also trigger on a complete `<function=NAME>` opener.
    if (isQwen3Coder) for (const fn of fns) callStarts.push(`<function=${fn.name}>`);
    // as the reference: lazy whenever tools are offered with "auto", even beside a response schema
    const lazy = hasTools && req.toolChoice === "auto";
    const triggers: GrammarTrigger[] = include && lazy ? callStarts.map(word) : [];

    return familyPlan({
      build(p) {
        const gen = p.literal(GEN_PREFIX);
        const reasoning =
          supportsReasoning && extractReasoning
            ? p.optional(p.seq("<think>", p.space(), p.reasoning(p.untilOneOf(["</think>", "<tool_call>"])), p.alt(p.literal("</think>"), p.peek(p.literal("<tool_call>")))))
            : p.eps();
        if (hasResponseFormat) return { root: gen.then(reasoning.spaced(p.content(p.schema(p.json(), "response-format", req.jsonSchema)))) };
        if (!useTools) return { root: gen.then(reasoning.spaced(p.content(p.rest()))) };

        const argClose = () => p.toolArgClose(p.literal(PARAM_CLOSE));
        const argString = p.rule("xml-arg-string", p.ac(p.seq(p.toolArgStringValue(p.until(PARAM_CLOSE)), argClose()), PARAM_CLOSE));
        // Beyond the reference (reference_mode off): `True`/`False`/`None` as the template's
        // `| string` prints them (containers it prints with tojson), and the declaration order.
        const extended = !req.referenceMode;
        const choice = toolChoice(p, fns, (fn) => {
          const required: PegParser[] = [];
          const optional: PegParser[] = [];
          const declared: { parser: PegParser; required: boolean }[] = [];
          for (const a of argumentSpecs(fn)) {
            const ruleName = `tool-${fn.name}-arg-${a.name}`;
            const open = p.toolArgOpen(p.seq("<parameter=", p.toolArgName(p.literal(a.name)), ">\n"));
            const json = p.schema(p.json(), `${ruleName}-schema`, a.schema);
            const value = a.isString ? argString : argumentValue(p, json, argClose, extended ? pythonLiteralValue(p, a.schema, false) : null);
            const arg = p.rule(ruleName, p.toolArg(p.seq(open, value)));
            (a.required ? required : optional).push(arg);
            declared.push({ parser: arg, required: a.required });
          }
          let args = p.permute(`tool-${fn.name}-args`, required);
          if (optional.length > 0) args = p.seq(args, p.zeroOrMore(p.choice(optional)));
          const close = () => p.toolClose(p.literal("</function>\n"));
          return p.tool(p.seq(p.toolOpen(p.seq("<function=", p.toolName(p.literal(fn.name)), ">\n")), argumentOrders(p, p.toolArgs(args), extended ? declared : null, close, (x) => p.toolArgs(x))));
        });
        const body = p.seq(choice, "</tool_call>", p.space());
        const call = p.rule("tool-call", p.seq("<tool_call>\n", body));
        const first = isQwen3Coder ? p.rule("tool-call-first", p.seq(p.optional(p.literal("<tool_call>\n")), body)) : call;
        const calls = req.parallelToolCalls ? p.seq(first, p.zeroOrMore(call)) : first;
        const toolCalls = p.triggerRule("tool-call-root", p.repeat(calls, req.toolChoice === "required" ? 1 : 0, 1));
        return {
          root: gen.then(reasoning.spaced(p.content(p.untilOneOf(callStarts))).spaced(toolCalls)),
          callsOnly: gen.then(callsAfterReasoning(p, reasoning, toolCalls)),
        };
      },
      grammar: grammarMode(include, lazy),
      triggers,
      preservedTokens: supportsReasoning ? ["<tool_call>", "</tool_call>", "<think>", "</think>"] : ["<tool_call>", "</tool_call>"],
      thinkingStartTag: supportsReasoning ? "<think>" : "",
      thinkingEndTags: supportsReasoning ? ["</think>", "<tool_call>"] : [],
    });
  },
};
