/**
 * Ministral 3 / Magistral / Devstral (`[SYSTEM_PROMPT]`, `[TOOL_CALLS]`, `[ARGS]`, no `[CALL_ID]`):
 * `[THINK]reasoning[/THINK]`, content, then `[TOOL_CALLS]NAME[ARGS]{json}` per call. A JSON-schema
 * answer is fenced in ```json ... ```. As `common_chat_params_init_ministral_3` (the template layer
 * rewrites system/assistant messages into its content blocks).
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

export function applyMinistral3(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  let includeGrammar = true;

  const parser = buildChatPegParser((p) => {
    const gen = p.eps();
    const reasoning = req.reasoningFormat !== "none" ? p.optional(p.cat("[THINK]", () => p.reasoning(p.until("[/THINK]")), "[/THINK]")) : p.eps();
    if (hasResponseFormat) {
      // C++17 sequences `a << b` left to right: the fence literal is made before the answer's nodes
      return gen.then(reasoning.spaced("```json").spaced(p.content(p.schema(p.json(), "response-format", req.jsonSchema))).spaced("```"));
    }
    if (hasTools && req.toolChoice !== "none") {
      let choice = p.choice();
      for (const fn of fns) {
        const call = p.cat(
          () => p.toolOpen(p.cat(() => p.toolName(p.literal(fn.name)), "[ARGS]")),
          () => p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))),
        );
        choice = choice.or(p.rule(`tool-${fn.name}`, call));
      }
      const min = req.toolChoice === "required" ? 1 : 0;
      const max = req.parallelToolCalls ? -1 : 1;
      const toolCalls = p.triggerRule("tool-call", p.repeat(p.cat("[TOOL_CALLS]", choice), min, max));
      const content = p.content(p.until("[TOOL_CALLS]"));
      return gen.then(reasoning.spaced(content).spaced(toolCalls));
    }
    includeGrammar = false;
    return gen.then(reasoning.spaced(p.content(p.rest())));
  });

  const grammarLazy = includeGrammar && hasTools && req.toolChoice === "auto";
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word("[TOOL_CALLS]")] : [],
    preservedTokens: ["[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "[THINK]",
    thinkingEndTags: ["[/THINK]"],
    parser,
  };
}
