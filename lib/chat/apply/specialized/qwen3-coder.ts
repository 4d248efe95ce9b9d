/**
 * Qwen3-Coder XML calls (also Qwen3.5, Nemotron 3 Nano, StepFun 3.5 Flash):
 * `<tool_call>\n<function=NAME>\n<parameter=K>\nv\n</parameter>\n</function>\n</tool_call>`.
 * As `common_chat_params_init_qwen3_coder`: string-typed parameters are raw text, others JSON; the
 * required parameters in any order; `<think>` reasoning ends at `</think>` or at a call; Qwen3-Coder
 * itself (no `<think>` in the template) may drop the leading `<tool_call>`.
 */
import { SchemaInfo } from "../../../json-schema/schema-info.js";
import type { PegParser } from "../../../peg/builder.js";
import { buildChatPegParser } from "../../grammar/builder.js";
import type { GrammarTrigger } from "../../plan.js";
import { toolFunctions, toolParameters, toolProperties, toolRequired } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const GEN_PREFIX = "<|im_start|>assistant\n";
const PARAM_CLOSE = "\n</parameter>\n";

export function applyQwen3Coder(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const supportsReasoning = source.includes("<think>");
  const isQwen3Coder = !supportsReasoning;
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const extractReasoning = req.reasoningFormat !== "none";
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const callStarts = ["<tool_call>"];
  // Qwen3-Coder sometimes omits <tool_call>: also trigger on a complete `<function=NAME>` opener.
  if (isQwen3Coder) for (const fn of fns) callStarts.push(`<function=${fn.name}>`);

  const parser = buildChatPegParser((p) => {
    const gen = p.literal(GEN_PREFIX);
    let reasoning = p.eps();
    if (supportsReasoning && extractReasoning) {
      reasoning = p.optional(
        p.cat(
          "<think>",
          () => p.space(),
          () => p.reasoning(p.untilOneOf(["</think>", "<tool_call>"])),
          () => p.alts(() => p.literal("</think>"), () => p.peek(p.literal("<tool_call>"))),
        ),
      );
    }
    if (hasResponseFormat) {
      return gen.then(reasoning.spaced(p.content(p.schema(p.json(), "response-format", req.jsonSchema))));
    }
    if (hasTools && req.toolChoice !== "none") {
      const argClose = p.toolArgClose(p.literal(PARAM_CLOSE));
      const argString = p.rule("xml-arg-string", p.ac(p.cat(() => p.toolArgStringValue(p.until(PARAM_CLOSE)), argClose), PARAM_CLOSE));
      let choice = p.choice();
      for (const fn of fns) {
        const info = new SchemaInfo();
        info.resolveRefs(toolParameters(fn));
        const required: PegParser[] = [];
        const optional: PegParser[] = [];
        const req_ = toolRequired(fn);
        for (const [name, schema] of toolProperties(fn)) {
          const ruleName = `tool-${fn.name}-arg-${name}`;
          const open = p.toolArgOpen(p.cat("<parameter=", () => p.toolArgName(p.literal(name)), ">\n"));
          const value = info.resolvesToString(schema) ? argString : p.cat(() => p.toolArgJsonValue(p.schema(p.json(), `${ruleName}-schema`, schema)), argClose);
          const rule = p.rule(ruleName, p.toolArg(p.cat(open, value)));
          (req_.has(name) ? required : optional).push(rule);
        }
        let args = p.permute(`tool-${fn.name}-args`, required);
        if (optional.length > 0) args = p.cat(args, () => p.zeroOrMore(p.choice(optional)));
        const func = p.tool(
          p.cat(
            () => p.toolOpen(p.cat("<function=", () => p.toolName(p.literal(fn.name)), ">\n")),
            () => p.toolArgs(args),
            () => p.toolClose(p.literal("</function>\n")),
          ),
        );
        choice = choice.or(p.rule(`tool-${fn.name}`, func));
      }
      const minCalls = req.toolChoice === "required" ? 1 : 0;
      const body = p.cat(choice, "</tool_call>", () => p.space());
      const call = p.rule("tool-call", p.cat("<tool_call>\n", body));
      const first = isQwen3Coder ? p.rule("tool-call-first", p.cat(() => p.optional(p.literal("<tool_call>\n")), body)) : call;
      const calls = req.parallelToolCalls ? p.cat(first, () => p.zeroOrMore(call)) : first;
      const toolCalls = p.triggerRule("tool-call-root", p.repeat(calls, minCalls, 1));
      return gen.then(reasoning.spaced(p.content(p.untilOneOf(callStarts))).spaced(toolCalls));
    }
    return gen.then(reasoning.spaced(p.content(p.rest())));
  });

  let grammar = "";
  let grammarLazy = false;
  const grammarTriggers: GrammarTrigger[] = [];
  if (includeGrammar) {
    // As the reference: lazy whenever tools are offered with "auto", even beside a response schema.
    grammarLazy = hasTools && req.toolChoice === "auto";
    grammar = planGrammar(parser, req, grammarLazy, hasResponseFormat);
    if (grammarLazy) for (const s of callStarts) grammarTriggers.push(word(s));
  } else if (req.grammar !== "") grammar = req.grammar;

  return {
    prompt,
    format: "peg-native",
    grammar,
    grammarLazy,
    grammarTriggers,
    preservedTokens: supportsReasoning ? ["<tool_call>", "</tool_call>", "<think>", "</think>"] : ["<tool_call>", "</tool_call>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: supportsReasoning ? "<think>" : "",
    thinkingEndTags: supportsReasoning ? ["</think>", "<tool_call>"] : [],
    parser,
  };
}
