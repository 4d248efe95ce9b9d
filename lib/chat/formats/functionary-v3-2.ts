/**
 * Functionary v3.2: the prompt ends with `>>>`; the model names a recipient: `all\n` then content,
 * or `NAME\n{json}` for a call (several calls in a row when parallel). As
 * `common_chat_params_init_functionary_v3_2`; the lazy grammar wakes on `>>>` not followed by `all`.
 */
import { toolParameters } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { familyPlan, grammarMode, pattern, shapeOf, toolChoice } from "./helpers.js";

export const functionaryV32: ChatFamily = {
  name: "functionary-v3.2",
  detect: (src) => src.includes(">>>all") && src.includes(">>>${recipient}"),

  plan({ req }) {
    const { fns, useTools } = shapeOf(req);
    return familyPlan({
      build(p) {
        const contentUntilTool = p.seq("all\n", p.content(p.until(">>>")));
        const contentUntilEnd = p.seq("all\n", p.content(p.rest()));
        const gen = p.literal("<|start_header_id|>assistant<|end_header_id|>\n\n>>>");
        if (!useTools) return { root: p.seq(gen, contentUntilEnd, p.end()) };

        const choice = toolChoice(p, fns, (fn) =>
          p.tool(p.seq(p.toolOpen(p.seq(p.toolName(p.literal(fn.name)), "\n")), p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))))),
        );
        const toolsOnly = p.triggerRule("tools", p.oneOrMore(choice));
        const contentAndTools = contentUntilTool.then(toolsOnly);
        const callsOnly = gen.then(p.seq(req.parallelToolCalls ? toolsOnly : choice, p.end()));
        let body;
        if (req.toolChoice === "required") {
          body = req.parallelToolCalls
            ? p.seq(p.choice([contentAndTools, toolsOnly]), p.end())
            : p.seq(p.choice([contentUntilTool.then(choice), toolsOnly]), p.end());
        } else if (req.parallelToolCalls) {
          body = p.seq(p.choice([contentAndTools, contentUntilEnd, toolsOnly]), p.end());
        } else {
          body = p.seq(p.choice([contentUntilTool.then(choice), contentUntilEnd, choice]), p.end());
        }
        return { root: gen.then(body), callsOnly };
      },
      grammar: grammarMode(useTools, req.toolChoice === "auto"),
      triggers: useTools ? [pattern(">>>(?!all)")] : [],
      preservedTokens: [">>>all"],
      thinkingStartTag: "",
      thinkingEndTags: [],
      supportsResponseFormat: false,
    });
  },
};
