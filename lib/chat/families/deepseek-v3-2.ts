/**
 * DeepSeek V3.2 / V4 DSML calls:
 * `<｜DSML｜function_calls>` (V4: `tool_calls`) `<｜DSML｜invoke name="NAME">`
 * `<｜DSML｜parameter name="K" string="true|false">v</｜DSML｜parameter>` ... `</｜DSML｜invoke>`.
 * As `common_chat_params_init_deepseek_v3_2`: required parameters in order, optional ones after in
 * any order; with thinking on, reasoning may run straight into the call block; with thinking off,
 * the empty `<think></think>` (V4: a bare `</think>`) the prompt leaves is still consumed. The
 * reference renders V4's tool results in the order of the calls they answer, and shows V4 the
 * response schema (`response_format`).
 */
import type { PegParser } from "../../peg/builder.js";
import { declaredOrder } from "../grammar/argument-values.js";
import type { ChatFamily } from "./family.js";
import { callsAfterReasoning, argumentSpecs, familyPlan, grammarMode, requiredThenOptional, shapeOf, toolChoice, word } from "./helpers.js";

const DSML = "｜DSML｜";
const THINK_START = "<think>";
const THINK_END = "</think>";
const GEN_PROMPT = "<｜Assistant｜>";
const TC_SEPARATOR = "\n\n";

type JsonObject = Record<string, unknown>;

const isV4 = (src: string): boolean => !src.includes("function_calls");

/** DeepSeek V4 renders tool results in the order of the calls they answer. */
function sortToolResults(messages: JsonObject[]): JsonObject[] {
  const out = messages.map((m) => m);
  let order = new Map<string, number>();
  let i = 0;
  while (i < out.length) {
    const m = out[i]!;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      order = new Map();
      (m.tool_calls as JsonObject[]).forEach((c, idx) => {
        if (typeof c.id === "string" && c.id !== "") order.set(c.id, idx);
      });
      i++;
      continue;
    }
    if (m.role !== "user" && m.role !== "tool") {
      i++;
      continue;
    }
    const toolPositions: number[] = [];
    let end = i;
    for (; end < out.length; end++) {
      const r = out[end]!.role;
      if (r === "tool") toolPositions.push(end);
      else if (r !== "user") break;
    }
    if (toolPositions.length > 1 && order.size > 0) {
      const rank = (x: JsonObject): number => order.get(typeof x.tool_call_id === "string" ? x.tool_call_id : "") ?? 0;
      const sorted = toolPositions.map((p) => out[p]!).sort((a, b) => rank(a) - rank(b)); // stable, like std::stable_sort
      toolPositions.forEach((p, k) => (out[p] = sorted[k]!));
    }
    i = end;
  }
  return out;
}

export const deepseekV32: ChatFamily = {
  name: "deepseek-v3.2",
  detect: (src) => src.includes("dsml_token") && src.includes("DSML") && (src.includes("function_calls") || src.includes("tool_calls")),
  prepareMessages: (messages, src) => (isV4(src) ? sortToolResults(messages) : undefined),
  templateVariables: (src, request) => {
    const schema = request.json_schema;
    return isV4(src) && typeof schema === "object" && schema !== null && !Array.isArray(schema) ? { response_format: schema } : undefined;
  },

  plan({ source, req }) {
    const v4 = isV4(source);
    const block = v4 ? "tool_calls" : "function_calls";
    const FC_START = `<${DSML}${block}>`;
    const FC_END = `</${DSML}${block}>`;
    const INVOKE_START = `<${DSML}invoke`;
    const INVOKE_END = `</${DSML}invoke>`;
    const PARAM_START = `<${DSML}parameter`;
    const PARAM_END = `</${DSML}parameter>`;
    const { fns, hasTools, useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;

    return familyPlan({
      build(p) {
        const gen = p.literal(GEN_PROMPT);
        const end = p.end();
        const choice = !useTools
          ? p.choice()
          : toolChoice(p, fns, (fn) => {
              const requiredArgs: PegParser[] = [];
              const optionalArgs: PegParser[] = [];
              const declared: { parser: PegParser; required: boolean }[] = [];
              for (const a of argumentSpecs(fn)) {
                const arg = p.toolArg(
                  p.seq(
                    p.toolArgOpen(p.seq(`${PARAM_START} name="`, p.toolArgName(p.literal(a.name)), `" string="${a.isString ? "true" : "false"}">`)),
                    a.isString ? p.toolArgStringValue(p.until(PARAM_END)) : p.toolArgJsonValue(p.schema(p.json(), `tool-${fn.name}-arg-${a.name}-schema`, a.schema, false)),
                    p.toolArgClose(p.literal(PARAM_END)),
                  ),
                );
                const rule = p.rule(`tool-${fn.name}-arg-${a.name}`, arg);
                (a.required ? requiredArgs : optionalArgs).push(rule);
                declared.push({ parser: rule, required: a.required });
              }
              // beyond the reference (reference_mode off): the declaration order too (grammar/argument-values.ts)
              const reference = requiredThenOptional(p, requiredArgs, optionalArgs);
              const inOrder = declaredOrder(p, declared, !req.referenceMode);
              const args = inOrder === null ? reference : p.choice([p.seq(reference, p.space(), p.peek(p.literal(INVOKE_END))), inOrder]);
              return p.tool(p.seq(p.toolOpen(p.seq(`${INVOKE_START} name="`, p.toolName(p.literal(fn.name)), '">\n')), args, p.space(), p.toolClose(p.literal(INVOKE_END))));
            });

        const obligatoryCalls = req.parallelToolCalls
          ? p.triggerRule("tool-call", p.seq(FC_START, p.space(), choice, p.zeroOrMore(p.seq(p.space(), choice)), p.space(), FC_END))
          : p.triggerRule("tool-call", p.seq(FC_START, p.space(), choice, p.space(), FC_END));
        const toolCalls = required ? obligatoryCalls : p.optional(obligatoryCalls);

        let reasoning = p.eps();
        let reasoningWithCalls = p.eps();
        let allowReasoningWithCalls = false;
        if (extractReasoning && req.enableThinking) {
          reasoning = p.optional(p.seq(THINK_START, p.reasoning(p.until(THINK_END)), THINK_END));
          reasoningWithCalls = p.seq(THINK_START, p.reasoning(p.untilOneOf([TC_SEPARATOR + FC_START, FC_START, THINK_END])), p.space(), obligatoryCalls);
          allowReasoningWithCalls = true;
        } else if (extractReasoning) {
          // thinking off: the prompt's empty think block (V4: a bare </think>) must still be consumed
          reasoning = v4 ? p.optional(p.literal(THINK_END)) : p.optional(p.seq(THINK_START, p.until(THINK_END), THINK_END));
        }

        if (hasResponseFormat) {
          const responseFormat = p.rule("response-format", p.seq("```json", p.space(), p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)), p.space(), "```"));
          return { root: p.seq(gen, reasoning, responseFormat, end) };
        }
        if (!useTools) return { root: p.seq(gen, reasoning, p.content(p.rest()), end) };

        const contentBefore = p.seq(p.negate(p.literal(THINK_START)), p.content(p.untilOneOf([TC_SEPARATOR + FC_START, FC_START])), p.space());
        if (allowReasoningWithCalls) {
          return {
            root: p.seq(gen, p.alt(reasoningWithCalls, p.seq(reasoning, contentBefore, toolCalls)), end),
            callsOnly: p.seq(gen, p.alt(reasoningWithCalls, callsAfterReasoning(p, reasoning, obligatoryCalls)), end),
          };
        }
        return { root: p.seq(gen, reasoning, contentBefore, toolCalls, end), callsOnly: p.seq(gen, callsAfterReasoning(p, reasoning, obligatoryCalls), end) };
      },
      // as the reference: lazy whenever tools are offered and not required (even beside a response schema)
      grammar: grammarMode(include, hasTools && !required),
      triggers: include ? [word(FC_START)] : [],
      preservedTokens: [DSML, THINK_START, THINK_END],
      thinkingStartTag: THINK_START,
      thinkingEndTags: [THINK_END, FC_START],
    });
  },
};
