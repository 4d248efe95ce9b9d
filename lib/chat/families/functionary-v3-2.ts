/**
 * Functionary v3.2: the prompt ends with `>>>`; the model names a recipient: `all\n` then content,
 * or `NAME\n{json}` for a call, each further recipient after another `>>>`. As
 * `common_chat_params_init_functionary_v3_2` but for those `>>>` (see below); the lazy grammar wakes
 * on `>>>` not followed by `all`, and (outside reference mode) on a call at the output's start.
 */
import { escapeRegex } from "../../llama/triggers.js";
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
        // Every recipient after the first is introduced by `>>>` (the prompt ends with the first):
        // `all\ntext>>>f\n{...}>>>g\n{...}`. The reference leaves `>>>` out between content and
        // a call and between calls, so text then a call parses as content, a second call does not
        // parse, and its lazy grammar (fed from the trigger's `>>>`) hits a dead end.
        const more = req.parallelToolCalls ? p.zeroOrMore(p.seq(">>>", choice)) : p.eps();
        const toolsFirst = p.triggerRule("tools", p.seq(choice, more));
        const toolsAfterContent = p.triggerRule("tools-after-content", p.seq(">>>", choice, more));
        const contentAndTools = p.seq(contentUntilTool, toolsAfterContent);
        const callsOnly = gen.then(p.seq(toolsFirst, p.end()));
        const body =
          req.toolChoice === "required"
            ? p.seq(p.choice([contentAndTools, toolsFirst]), p.end())
            : p.seq(p.choice([contentAndTools, contentUntilEnd, toolsFirst]), p.end());
        return { root: gen.then(body), callsOnly };
      },
      grammar: grammarMode(useTools, req.toolChoice === "auto"),
      // Beyond the reference: the prompt ends with the first `>>>`, which a lazy sampler never
      // sees (it searches the output), so a first recipient that is a call never started the
      // grammar. Also wake on a function's name and newline at the very start of the output.
      triggers: useTools ? [pattern(">>>(?!all)"), ...(req.referenceMode ? [] : [pattern(`^(?:${fns.map((f) => escapeRegex(f.name)).join("|")})\n`)])] : [],
      preservedTokens: [">>>all"],
      thinkingStartTag: "",
      thinkingEndTags: [],
      supportsResponseFormat: false,
    });
  },
};
