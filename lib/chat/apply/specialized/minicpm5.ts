/**
 * MiniCPM5: `<think>` reasoning, content, then one or more
 * `<function name="NAME"><param name="K">v</param></function>` (string values raw or in CDATA,
 * others JSON). As `common_chat_params_init_minicpm5`.
 */
import { SchemaInfo } from "../../../json-schema/schema-info.js";
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters, toolProperties } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

export function applyMinicpm5(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const gen = p.literal("<|im_start|>assistant\n");
    let reasoning = p.eps();
    if (req.reasoningFormat !== "none") {
      // C++: ("<think>" << R << "</think>") + space — GCC builds the right operand of + first
      // and `"<think>" << R` makes the literal after R's nodes
      const trailing = p.space();
      const body = p.reasoning(p.until("</think>"));
      reasoning = p.literal("<think>").spaced(body).spaced("</think>").then(trailing);
    }
    if (hasResponseFormat) return p.cat(gen, reasoning, () => p.content(p.schema(p.json(), "response-format", req.jsonSchema)));

    if (hasTools && req.toolChoice !== "none") {
      const stringValue = p.choice([
        p.cat(
          () => p.literal("<![CDATA["),
          () => p.ac(p.cat(() => p.toolArgStringValue(p.until("]]>")), () => p.literal("]]>")), "]]>"),
          () => p.toolArgClose(p.literal("</param>")),
        ),
        p.cat(
          () => p.negate(p.literal("<![CDATA[")),
          () => p.ac(p.cat(() => p.toolArgStringValue(p.until("</param>")), () => p.toolArgClose(p.literal("</param>"))), "</param>"),
        ),
      ]);
      let choice = p.choice();
      for (const fn of fns) {
        let args = p.eps();
        const props = toolProperties(fn);
        if (props.length > 0) {
          const info = new SchemaInfo();
          info.resolveRefs(toolParameters(fn));
          let argChoice = p.choice();
          for (const [name, schema] of props) {
            let value = p.eps(); // the reference starts each value as ε: one node, kept for identical ids
            value = info.resolvesToString(schema)
              ? stringValue
              : p.cat(() => p.toolArgJsonValue(p.schema(p.json(), `tool-${fn.name}-arg-${name}-schema`, schema, false)), () => p.toolArgClose(p.literal("</param>")));
            const arg = p.toolArg(p.cat(() => p.toolArgOpen(p.cat(() => p.literal('<param name="'), () => p.toolArgName(p.literal(name)), () => p.literal('">'))), value));
            argChoice = argChoice.or(arg);
          }
          args = p.zeroOrMore(p.cat(argChoice, () => p.space()));
        }
        const open = p.toolOpen(p.cat(() => p.literal('<function name="'), () => p.toolName(p.literal(fn.name)), () => p.literal('">')));
        const call = p.tool(open.spaced(p.toolArgs(args)).spaced(p.toolClose(p.literal("</function>"))));
        choice = choice.or(p.rule(`tool-${fn.name}`, call));
      }
      const max = req.parallelToolCalls ? -1 : 1;
      const toolCalls = p.triggerRule("tool-call", p.repeat(p.cat(choice, () => p.space()), 1, max));
      const content = p.content(p.until("<function"));
      return p.cat(gen, reasoning, content, toolCalls, () => p.end());
    }
    return p.cat(gen, reasoning, () => p.content(p.rest()), () => p.end());
  });

  const grammarLazy = includeGrammar && !(hasResponseFormat || (hasTools && req.toolChoice === "required"));
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word("<function")] : [],
    preservedTokens: ["<function", "<param", "</function>", "</param>", "<think>", "</think>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "<think>",
    thinkingEndTags: ["</think>"],
    parser,
  };
}
