/**
 * Muse Glimmer: each assistant message is `<|start|>assistant to=RECIPIENT<|message|>...` ending in
 * `<|eom|>` (more follow) or `<|eot|>`: `to=self` is reasoning, `to=user` (or no recipient) the
 * answer, any other recipient a call in `<atem:function_calls><atem:invoke name="NAME">
 * <atem:parameter name="K">v</atem:parameter></atem:invoke></atem:function_calls>` markup.
 * As `common_chat_params_init_muse_glimmer` (its generation prompt is fixed, not rendered).
 */
import { SchemaInfo } from "../../../json-schema/schema-info.js";
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters, toolProperties } from "../../tools.js";
import { pattern, planGrammar, renderPrompts } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const PARAM_END = "</atem:parameter>";

export function applyMuseGlimmer(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt } = renderPrompts(source, req);
  const generationPrompt = "<|start|>assistant";
  const fns = toolFunctions(req.tools ?? []);
  const extractReasoning = req.reasoningFormat !== "none";
  const includeGrammar = fns.length > 0 && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    const start = p.rule("start", p.literal("<|start|>assistant"));
    if (!extractReasoning && !includeGrammar) return p.cat(start, () => p.content(p.rest()));
    const self = (inner: () => ReturnType<typeof p.eps>) => p.cat(() => p.literal(" to=self<|message|>"), inner, () => p.literal("<|eom|>"));
    if (extractReasoning) p.rule("analysis", self(() => p.reasoning(p.until("<|eom|>"))));
    else p.rule("analysis", self(() => p.content(p.until("<|eom|>"))));
    const analysis = p.ref("analysis");
    const recipient = p.optional(p.literal(" to=user"));
    const finalMsg = p.rule("final", p.cat(recipient, () => p.literal("<|message|>"), () => p.content(p.untilOneOf(["<|eot|>", "<|eom|>"]))));

    if (includeGrammar) {
      const stringValue = p.ac(p.cat(() => p.toolArgStringValue(p.until(PARAM_END)), () => p.toolArgClose(p.literal(PARAM_END))), PARAM_END);
      let choice = p.choice();
      for (const fn of fns) {
        let args = p.eps();
        const props = toolProperties(fn);
        if (props.length > 0) {
          const info = new SchemaInfo();
          info.resolveRefs(toolParameters(fn));
          let argChoice = p.choice();
          for (const [name, schema] of props) {
            let value = p.eps(); // ε first, as the reference: keeps node ids identical
            value = info.resolvesToString(schema)
              ? stringValue
              : p.cat(() => p.toolArgJsonValue(p.schema(p.json(), `tool-${fn.name}-arg-${name}-schema`, schema, false)), () => p.toolArgClose(p.literal(PARAM_END)));
            const open = p.toolArgOpen(p.cat(() => p.literal('<atem:parameter name="'), () => p.toolArgName(p.literal(name)), () => p.literal('">')));
            argChoice = argChoice.or(p.toolArg(p.cat(open, value)));
          }
          args = p.zeroOrMore(p.cat(argChoice, () => p.space()));
        }
        const open = p.toolOpen(
          p.cat(
            () => p.literal(" to="),
            () => p.until("<|message|>"),
            () => p.literal("<|message|><atem:function_calls>"),
            () => p.space(),
            () => p.literal('<atem:invoke name="'),
            () => p.toolName(p.literal(fn.name)),
            () => p.literal('">'),
            () => p.space(),
          ),
        );
        const call = p.tool(open.spaced(p.toolArgs(args)).spaced(p.toolClose(p.cat(() => p.literal("</atem:invoke>"), () => p.space(), () => p.literal("</atem:function_calls>")))));
        choice = choice.or(p.rule(`tool-${fn.name}`, call));
      }
      const toolCalls = req.parallelToolCalls
        ? p.triggerRule("tool-call", p.cat(choice, () => p.zeroOrMore(p.cat(() => p.literal("<|eom|>"), start, choice))))
        : p.triggerRule("tool-call", choice);
      if (req.toolChoice === "required") return p.cat(() => p.zeroOrMore(start.then(analysis)), start, toolCalls);
      const trailing = p.optional(p.cat(() => p.literal("<|eom|>"), start, toolCalls));
      return p.cat(() => p.zeroOrMore(start.then(analysis)), start, () => p.alts(toolCalls, () => finalMsg.then(trailing)));
    }
    return p.cat(() => p.zeroOrMore(start.then(analysis)), start, finalMsg);
  });

  const grammarLazy = includeGrammar && req.toolChoice !== "required";
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, false) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [pattern("<\\|start\\|>assistant( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?<\\|message\\|>)")] : [],
    preservedTokens: [
      "<|start|>", "<|message|>", "<|eom|>", "<|eot|>",
      "<atem:function_calls>", "<atem:invoke", "<atem:parameter", "</atem:parameter>", "</atem:invoke>", "</atem:function_calls>",
    ],
    additionalStops: [],
    generationPrompt,
    // the reference declares thinking support but sets no tags for this family
    thinkingStartTag: "",
    thinkingEndTags: [],
    parser,
  };
}
