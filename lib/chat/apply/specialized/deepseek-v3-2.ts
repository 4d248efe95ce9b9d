/**
 * DeepSeek V3.2 / V4 DSML calls:
 * `<｜DSML｜function_calls>` (V4: `tool_calls`) `<｜DSML｜invoke name="NAME">`
 * `<｜DSML｜parameter name="K" string="true|false">v</｜DSML｜parameter>` ... `</｜DSML｜invoke>`.
 * As `common_chat_params_init_deepseek_v3_2`: required parameters in order, optional ones after in
 * any order; with thinking on, reasoning may run straight into the call block; with thinking off,
 * the empty `<think></think>` (V4: a bare `</think>`) the prompt leaves is still consumed.
 */
import { SchemaInfo } from "../../../json-schema/schema-info.js";
import type { PegParser } from "../../../peg/builder.js";
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters, toolProperties, toolRequired } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const DSML = "｜DSML｜";
const THINK_START = "<think>";
const THINK_END = "</think>";
const GEN_PROMPT = "<｜Assistant｜>";
const TC_SEPARATOR = "\n\n";

export function applyDeepseekV32(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const isV4 = !source.includes("function_calls");
  const block = isV4 ? "tool_calls" : "function_calls";
  const FC_START = `<${DSML}${block}>`;
  const FC_END = `</${DSML}${block}>`;
  const INVOKE_START = `<${DSML}invoke`;
  const INVOKE_END = `</${DSML}invoke>`;
  const PARAM_START = `<${DSML}parameter`;
  const PARAM_END = `</${DSML}parameter>`;

  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const extractReasoning = req.reasoningFormat !== "none";
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");
  const requireTools = req.toolChoice === "required";
  const hasToolCalls = hasTools && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    const gen = p.literal(GEN_PROMPT);
    const end = p.end();
    let choice = p.choice();
    if (hasToolCalls) {
      for (const fn of fns) {
        const params = toolParameters(fn);
        const required = toolRequired(fn);
        const info = new SchemaInfo();
        info.resolveRefs(params);
        const requiredParsers: PegParser[] = [];
        const optionalParsers: PegParser[] = [];
        for (const [name, schema] of toolProperties(fn)) {
          const isString = info.resolvesToString(schema);
          const arg = p.toolArg(
            p.cat(
              () =>
                p.toolArgOpen(
                  p.cat(
                    () => p.literal(`${PARAM_START} name="`),
                    () => p.toolArgName(p.literal(name)),
                    () => p.literal(`" string="${isString ? "true" : "false"}">`),
                  ),
                ),
              () =>
                isString
                  ? p.toolArgStringValue(p.until(PARAM_END))
                  : p.toolArgJsonValue(p.schema(p.json(), `tool-${fn.name}-arg-${name}-schema`, schema, false)),
              () => p.toolArgClose(p.literal(PARAM_END)),
            ),
          );
          const named = p.rule(`tool-${fn.name}-arg-${name}`, arg);
          (required.has(name) ? requiredParsers : optionalParsers).push(named);
        }
        let args = p.eps();
        requiredParsers.forEach((r, i) => {
          if (i > 0) args = p.cat(args, () => p.space());
          args = args.then(r);
        });
        if (optionalParsers.length > 0) {
          let anyOpt = p.choice();
          for (const o of optionalParsers) anyOpt = anyOpt.or(o);
          args = p.cat(args, () => p.repeat(p.cat(() => p.space(), anyOpt), 0, -1));
        }
        const func = p.tool(
          p.cat(
            () => p.toolOpen(p.cat(() => p.literal(`${INVOKE_START} name="`), () => p.toolName(p.literal(fn.name)), () => p.literal('">\n'))),
            args,
            () => p.space(),
            () => p.toolClose(p.literal(INVOKE_END)),
          ),
        );
        choice = choice.or(p.rule(`tool-${fn.name}`, func));
      }
    }

    let toolCalls = p.eps(); // the reference declares it as ε first: one node, kept for identical ids
    toolCalls = req.parallelToolCalls
      ? p.triggerRule(
          "tool-call",
          p.cat(() => p.literal(FC_START), () => p.space(), choice, () => p.zeroOrMore(p.cat(() => p.space(), choice)), () => p.space(), () => p.literal(FC_END)),
        )
      : p.triggerRule("tool-call", p.cat(() => p.literal(FC_START), () => p.space(), choice, () => p.space(), () => p.literal(FC_END)));

    let reasoning = p.eps();
    let reasoningWithCalls = p.eps();
    const obligatoryCalls = toolCalls;
    let allowReasoningWithCalls = false;
    if (!requireTools) toolCalls = p.optional(toolCalls);

    if (extractReasoning && req.enableThinking) {
      reasoning = p.optional(p.cat(THINK_START, () => p.reasoning(p.until(THINK_END)), THINK_END));
      reasoningWithCalls = p.cat(THINK_START, () => p.reasoning(p.untilOneOf([TC_SEPARATOR + FC_START, FC_START, THINK_END])), () => p.space(), obligatoryCalls);
      allowReasoningWithCalls = true;
    } else if (extractReasoning) {
      // thinking off: the prompt's empty think block (V4: a bare </think>) must still be consumed
      reasoning = isV4
        ? p.optional(p.literal(THINK_END))
        : p.optional(p.cat(() => p.literal(THINK_START), () => p.until(THINK_END), () => p.literal(THINK_END)));
    }

    if (hasResponseFormat) {
      const responseFormat = p.rule(
        "response-format",
        p.cat(
          () => p.literal("```json"),
          () => p.space(),
          () => p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)),
          () => p.space(),
          () => p.literal("```"),
        ),
      );
      return p.cat(gen, reasoning, responseFormat, end);
    }
    if (!hasToolCalls) return p.cat(gen, reasoning, () => p.content(p.rest()), end);

    const contentBefore = p.cat(() => p.negate(p.literal(THINK_START)), () => p.content(p.untilOneOf([TC_SEPARATOR + FC_START, FC_START])), () => p.space());
    return allowReasoningWithCalls
      ? p.cat(gen, () => p.alts(reasoningWithCalls, () => p.cat(reasoning, contentBefore, toolCalls)), end)
      : p.cat(gen, reasoning, contentBefore, toolCalls, end);
  });

  // As the reference: lazy whenever tools are offered and not required (even beside a response schema).
  const grammarLazy = includeGrammar && hasTools && !requireTools;
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word(FC_START)] : [],
    preservedTokens: [DSML, THINK_START, THINK_END],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: THINK_START,
    thinkingEndTags: [THINK_END, FC_START],
    parser,
  };
}
