/**
 * Muse Glimmer: each assistant message is `<|start|>assistant to=RECIPIENT<|message|>...` ending in
 * `<|eom|>` (more follow) or `<|eot|>`: `to=self` is reasoning, `to=user` (or no recipient) the
 * answer, any other recipient a call in `<atem:function_calls><atem:invoke name="NAME">
 * <atem:parameter name="K">v</atem:parameter></atem:invoke></atem:function_calls>` markup.
 * As `common_chat_params_init_muse_glimmer` (its generation prompt is fixed, not rendered).
 */
import type { PegParser } from "../../peg/builder.js";
import type { ChatFamily } from "./family.js";
import { argumentSpecs, familyPlan, grammarMode, pattern, shapeOf, toolChoice } from "./helpers.js";

const PARAM_END = "</atem:parameter>";
const GENERATION_PROMPT = "<|start|>assistant";

export const museGlimmer: ChatFamily = {
  name: "muse-glimmer",
  detect: (src) => src.includes("<atem:function_calls>") && src.includes("<|eom|>"),

  plan({ req }) {
    const { fns, useTools, required, extractReasoning } = shapeOf(req);
    return familyPlan({
      build(p) {
        const start = p.rule("start", p.literal(GENERATION_PROMPT));
        if (!extractReasoning && !useTools) return { root: p.seq(start, p.content(p.rest())) };
        const self = (inner: PegParser) => p.seq(" to=self<|message|>", inner, "<|eom|>");
        if (extractReasoning) p.rule("analysis", self(p.reasoning(p.until("<|eom|>"))));
        else p.rule("analysis", self(p.content(p.until("<|eom|>"))));
        const analysis = p.ref("analysis");
        const recipient = p.optional(p.literal(" to=user"));
        const finalMsg = p.rule("final", p.seq(recipient, "<|message|>", p.content(p.untilOneOf(["<|eot|>", "<|eom|>"]))));
        if (!useTools) return { root: p.seq(p.zeroOrMore(start.then(analysis)), start, finalMsg) };

        const stringValue = p.ac(p.seq(p.toolArgStringValue(p.until(PARAM_END)), p.toolArgClose(p.literal(PARAM_END))), PARAM_END);
        const choice = toolChoice(p, fns, (fn) => {
          const specs = argumentSpecs(fn);
          let args = p.eps();
          if (specs.length > 0) {
            const argChoice = p.choice(
              specs.map((a) => {
                const value = a.isString
                  ? stringValue
                  : p.seq(p.toolArgJsonValue(p.schema(p.json(), `tool-${fn.name}-arg-${a.name}-schema`, a.schema, false)), p.toolArgClose(p.literal(PARAM_END)));
                const open = p.toolArgOpen(p.seq('<atem:parameter name="', p.toolArgName(p.literal(a.name)), '">'));
                return p.toolArg(p.seq(open, value));
              }),
            );
            args = p.zeroOrMore(p.seq(argChoice, p.space()));
          }
          const open = p.toolOpen(p.seq(" to=", p.until("<|message|>"), "<|message|><atem:function_calls>", p.space(), '<atem:invoke name="', p.toolName(p.literal(fn.name)), '">', p.space()));
          return p.tool(open.spaced(p.toolArgs(args)).spaced(p.toolClose(p.seq("</atem:invoke>", p.space(), "</atem:function_calls>"))));
        });
        const toolCalls = req.parallelToolCalls
          ? p.triggerRule("tool-call", p.seq(choice, p.zeroOrMore(p.seq("<|eom|>", start, choice))))
          : p.triggerRule("tool-call", choice);
        // reasoning messages, then the calls: already without text before them
        const callsOnly = p.seq(p.zeroOrMore(start.then(analysis)), start, toolCalls);
        if (required) return { root: callsOnly, callsOnly };
        const trailing = p.optional(p.seq("<|eom|>", start, toolCalls));
        return { root: p.seq(p.zeroOrMore(start.then(analysis)), start, p.alt(toolCalls, finalMsg.then(trailing))), callsOnly };
      },
      grammar: grammarMode(useTools, !required),
      // Beyond the reference (outside reference mode): the first message's `<|start|>assistant`
      // is the generation prompt, which a lazy sampler never sees, so a call there never started
      // the grammar; also wake on the recipient at the very start of the output.
      triggers: useTools
        ? [
            pattern("<\\|start\\|>assistant( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?<\\|message\\|>)"),
            ...(req.referenceMode ? [] : [pattern("^( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?<\\|message\\|>)")]),
          ]
        : [],
      preservedTokens: [
        "<|start|>", "<|message|>", "<|eom|>", "<|eot|>",
        "<atem:function_calls>", "<atem:invoke", "<atem:parameter", "</atem:parameter>", "</atem:invoke>", "</atem:function_calls>",
      ],
      generationPrompt: GENERATION_PROMPT,
      supportsResponseFormat: false,
      // the reference declares thinking support but sets no tags for this family
      thinkingStartTag: "",
      thinkingEndTags: [],
    });
  },
};
