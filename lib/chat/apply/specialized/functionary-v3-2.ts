/**
 * Functionary v3.2: the prompt ends with `>>>`; the model names a recipient: `all\n` then content,
 * or `NAME\n{json}` for a call (several calls in a row when parallel). As
 * `common_chat_params_init_functionary_v3_2`; the lazy grammar wakes on `>>>` not followed by `all`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { pattern, planGrammar, renderPrompts } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

export function applyFunctionaryV32(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const useTools = fns.length > 0 && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    const contentUntilTool = p.cat(() => p.literal("all\n"), () => p.content(p.until(">>>")));
    const contentUntilEnd = p.cat(() => p.literal("all\n"), () => p.content(p.rest()));
    const gen = p.literal("<|start_header_id|>assistant<|end_header_id|>\n\n>>>");
    if (!useTools) return p.cat(gen, contentUntilEnd, () => p.end());

    let choice = p.choice();
    for (const fn of fns) {
      const call = p.tool(
        p.cat(
          () => p.toolOpen(p.cat(() => p.toolName(p.literal(fn.name)), () => p.literal("\n"))),
          () => p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))),
        ),
      );
      choice = choice.or(p.rule(`tool-${fn.name}`, call));
    }
    const toolsOnly = p.triggerRule("tools", p.oneOrMore(choice));
    const contentAndTools = contentUntilTool.then(toolsOnly);
    let ret = p.eps();
    if (req.toolChoice === "required") {
      ret = req.parallelToolCalls
        ? p.cat(() => p.choice([contentAndTools, toolsOnly]), () => p.end())
        : p.cat(() => p.choice([contentUntilTool.then(choice), toolsOnly]), () => p.end());
    } else if (req.parallelToolCalls) {
      ret = p.cat(() => p.choice([contentAndTools, contentUntilEnd, toolsOnly]), () => p.end());
    } else {
      const contentAndTool = contentUntilTool.then(choice);
      ret = p.cat(() => p.choice([contentAndTool, contentUntilEnd, choice]), () => p.end());
    }
    return gen.then(ret);
  });

  const grammarLazy = useTools && req.toolChoice === "auto";
  return {
    prompt,
    format: "peg-native",
    grammar: useTools ? planGrammar(parser, req, grammarLazy, false) : req.grammar,
    grammarLazy,
    grammarTriggers: useTools ? [pattern(">>>(?!all)")] : [],
    preservedTokens: [">>>all"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "",
    thinkingEndTags: [],
    parser,
  };
}
