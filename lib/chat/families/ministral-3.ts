/**
 * Ministral 3 / Magistral / Devstral (`[SYSTEM_PROMPT]`, `[TOOL_CALLS]`, `[ARGS]`, no `[CALL_ID]`):
 * `[THINK]reasoning[/THINK]`, content, then `[TOOL_CALLS]NAME[ARGS]{json}` per call. A JSON-schema
 * answer is fenced in ```json ... ```. As `common_chat_params_init_ministral_3`; the reference
 * rewrites system and assistant messages into content blocks (`thinking`, `text`) first.
 */
import { toolParameters } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { callsAfterReasoning, familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

export const ministral3: ChatFamily = {
  name: "ministral-3",
  detect: (src) => src.includes("[SYSTEM_PROMPT]") && src.includes("[TOOL_CALLS]") && src.includes("[ARGS]") && !src.includes("[CALL_ID]"),

  prepareMessages: (messages) =>
    messages.map((m) => {
      if (m.role !== "system" && m.role !== "assistant") return m;
      const blocks: unknown[] = [];
      if (typeof m.reasoning_content === "string") blocks.push({ type: "thinking", thinking: m.reasoning_content });
      if (typeof m.content === "string") blocks.push({ type: "text", text: m.content });
      else if (Array.isArray(m.content)) blocks.push(...(m.content as unknown[]));
      const { reasoning_content: _drop, ...rest } = m;
      return { ...rest, content: blocks };
    }),

  plan({ req }) {
    const { fns, hasTools, useTools, hasResponseFormat, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      build(p) {
        const gen = p.eps();
        const reasoning = extractReasoning ? p.optional(p.seq("[THINK]", p.reasoning(p.until("[/THINK]")), "[/THINK]")) : p.eps();
        if (hasResponseFormat) {
          return { root: gen.then(reasoning.spaced("```json").spaced(p.content(p.schema(p.json(), "response-format", req.jsonSchema))).spaced("```")) };
        }
        if (!useTools) return { root: gen.then(reasoning.spaced(p.content(p.rest()))) };
        const choice = toolChoice(p, fns, (fn) => p.seq(p.toolOpen(p.seq(p.toolName(p.literal(fn.name)), "[ARGS]")), p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn)))));
        const toolCalls = p.triggerRule("tool-call", p.repeat(p.seq("[TOOL_CALLS]", choice), req.toolChoice === "required" ? 1 : 0, req.parallelToolCalls ? -1 : 1));
        const content = p.content(p.until("[TOOL_CALLS]"));
        return { root: gen.then(reasoning.spaced(content).spaced(toolCalls)), callsOnly: gen.then(callsAfterReasoning(p, reasoning, toolCalls)) };
      },
      // as the reference: lazy whenever tools are offered with "auto", even beside a response schema
      grammar: grammarMode(include, hasTools && req.toolChoice === "auto"),
      triggers: include ? [word("[TOOL_CALLS]")] : [],
      preservedTokens: ["[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]"],
      thinkingStartTag: "[THINK]",
      thinkingEndTags: ["[/THINK]"],
    });
  },
};
