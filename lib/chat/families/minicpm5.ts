/**
 * MiniCPM5: `<think>` reasoning, content, then one or more
 * `<function name="NAME"><param name="K">v</param></function>` (string values raw or in CDATA,
 * others JSON). As `common_chat_params_init_minicpm5`.
 */
import { argumentValue, pythonLiteralValue } from "../grammar/argument-values.js";
import type { ChatFamily } from "./family.js";
import { callsAfterReasoning, argumentSpecs, familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

export const minicpm5: ChatFamily = {
  name: "minicpm5",
  detect: (src) => src.includes("Tool usage guidelines:") && src.includes('<function name="') && src.includes('<param name="'),

  plan({ req }) {
    const { fns, useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      build(p) {
        const gen = p.literal("<|im_start|>assistant\n");
        const reasoning = extractReasoning ? p.literal("<think>").spaced(p.reasoning(p.until("</think>"))).spaced("</think>").then(p.space()) : p.eps();
        if (hasResponseFormat) return { root: p.seq(gen, reasoning, p.content(p.schema(p.json(), "response-format", req.jsonSchema))) };
        if (!useTools) return { root: p.seq(gen, reasoning, p.content(p.rest()), p.end()) };

        const stringValue = p.choice([
          p.seq("<![CDATA[", p.ac(p.seq(p.toolArgStringValue(p.until("]]>")), "]]>"), "]]>"), p.toolArgClose(p.literal("</param>"))),
          p.seq(p.negate(p.literal("<![CDATA[")), p.ac(p.seq(p.toolArgStringValue(p.until("</param>")), p.toolArgClose(p.literal("</param>"))), "</param>")),
        ]);
        const choice = toolChoice(p, fns, (fn) => {
          const specs = argumentSpecs(fn);
          let args = p.eps();
          if (specs.length > 0) {
            const argChoice = p.choice(
              specs.map((a) => {
                // beyond the reference (reference_mode off): `True`/`False`/`None` as the template prints them
                const python = req.referenceMode ? null : pythonLiteralValue(p, a.schema, true);
                const value = a.isString
                  ? stringValue
                  : argumentValue(p, p.schema(p.json(), `tool-${fn.name}-arg-${a.name}-schema`, a.schema, false), () => p.toolArgClose(p.literal("</param>")), python);
                return p.toolArg(p.seq(p.toolArgOpen(p.seq('<param name="', p.toolArgName(p.literal(a.name)), '">')), value));
              }),
            );
            args = p.zeroOrMore(p.seq(argChoice, p.space()));
          }
          const open = p.toolOpen(p.seq('<function name="', p.toolName(p.literal(fn.name)), '">'));
          return p.tool(open.spaced(p.toolArgs(args)).spaced(p.toolClose(p.literal("</function>"))));
        });
        const toolCalls = p.triggerRule("tool-call", p.repeat(p.seq(choice, p.space()), 1, req.parallelToolCalls ? -1 : 1));
        const content = p.content(p.until("<function"));
        return { root: p.seq(gen, reasoning, content, toolCalls, p.end()), callsOnly: p.seq(gen, callsAfterReasoning(p, reasoning, toolCalls), p.end()) };
      },
      grammar: grammarMode(include, !(hasResponseFormat || (useTools && required))),
      triggers: include ? [word("<function")] : [],
      preservedTokens: ["<function", "<param", "</function>", "</param>", "<think>", "</think>"],
      thinkingStartTag: "<think>",
      thinkingEndTags: ["</think>"],
    });
  },
};
