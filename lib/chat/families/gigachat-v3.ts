/**
 * GigaChat 3: after `assistant<|role_sep|>\n`, content, then at most one call
 * `<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "NAME", "arguments": {...}}`.
 * No reasoning, no response-format constraint, no parallel calls. As `common_chat_params_init_gigachat_v3`.
 */
import { toolParameters } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";

const CALL_PREFIX = "<|message_sep|>\n\nfunction call<|role_sep|>\n";

export const gigachatV3: ChatFamily = {
  name: "gigachat-v3",
  detect: (src) => src.includes("<|role_sep|>") && src.includes("<|message_sep|>") && !src.includes("<|function_call|>"),

  plan({ req }) {
    const { fns, useTools } = shapeOf(req);
    return familyPlan({
      build(p) {
        const gen = () => p.literal("assistant<|role_sep|>\n");
        if (!useTools) return { root: p.seq(gen(), p.content(p.rest())) };
        const choice = toolChoice(p, fns, (fn) => {
          const name = p.jsonMember("name", p.seq('"', p.toolName(p.literal(fn.name)), '"'));
          const args = p.jsonMember("arguments", p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))));
          return p.toolOpen(p.literal("{").spaced(name)).spaced(",").spaced(args).spaced("}");
        });
        const call = p.rule("tool-call", p.seq(CALL_PREFIX, choice));
        const calls = p.triggerRule("tool-call-root", p.repeat(call, req.toolChoice === "required" ? 1 : 0, 1)); // one call at most
        return { root: p.seq(gen(), p.content(p.until("<|message_sep|>\n\n")).spaced(calls)), callsOnly: p.seq(gen(), calls) };
      },
      grammar: grammarMode(useTools, req.toolChoice === "auto"),
      triggers: useTools ? [word(CALL_PREFIX)] : [],
      preservedTokens: ["<|message_sep|>\n\n", "<|role_sep|>\n"],
      thinkingStartTag: "",
      thinkingEndTags: [],
      supportsResponseFormat: false,
    });
  },
};
