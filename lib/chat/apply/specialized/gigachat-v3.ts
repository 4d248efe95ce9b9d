/**
 * GigaChat 3: after `assistant<|role_sep|>\n`, content, then at most one call
 * `<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "NAME", "arguments": {...}}`.
 * No reasoning, no response-format constraint, no parallel calls. As `common_chat_params_init_gigachat_v3`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const CALL_PREFIX = "<|message_sep|>\n\nfunction call<|role_sep|>\n";

export function applyGigachatV3(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const useTools = fns.length > 0 && req.toolChoice !== "none";

  const parser = buildChatPegParser((p) => {
    let ret = p.eps();
    if (useTools) {
      let choice = p.choice();
      for (const fn of fns) {
        const name = p.jsonMember("name", p.cat('"', () => p.toolName(p.literal(fn.name)), '"'));
        const args = p.jsonMember("arguments", p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn))));
        const open = p.toolOpen(p.literal("{").spaced(name));
        choice = choice.or(p.rule(`tool-${fn.name}`, open.spaced(",").spaced(args).spaced("}")));
      }
      const min = req.toolChoice === "required" ? 1 : 0;
      const call = p.rule("tool-call", p.cat(() => p.literal(CALL_PREFIX), choice));
      const calls = p.triggerRule("tool-call-root", p.repeat(call, min, 1)); // one call at most
      ret = p.content(p.until("<|message_sep|>\n\n")).spaced(calls);
    } else {
      ret = p.content(p.rest());
    }
    return p.cat(() => p.literal("assistant<|role_sep|>\n"), ret);
  });

  const grammarLazy = useTools && req.toolChoice === "auto";
  return {
    prompt,
    format: "peg-native",
    grammar: useTools ? planGrammar(parser, req, grammarLazy, false) : req.grammar,
    grammarLazy,
    grammarTriggers: useTools ? [word(CALL_PREFIX)] : [],
    preservedTokens: ["<|message_sep|>\n\n", "<|role_sep|>\n"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "",
    thinkingEndTags: [],
    parser,
  };
}
