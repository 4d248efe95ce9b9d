/**
 * GPT-OSS (Harmony): messages `<|start|>assistant<|channel|>analysis<|message|>...<|end|>`
 * (reasoning), `<|channel|>commentary<|message|>...<|end|>` (preamble), `<|channel|>final<|message|>`
 * (the answer); a call names its recipient ` to=functions.NAME` in the role or the channel header,
 * optionally with `<|constrain|>json`, then `<|message|>{json}`. As `common_chat_params_init_gpt_oss`.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { pattern, planGrammar, renderPrompts } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const TRIGGERS = [
  "^\\s+to$",
  "^<\\|channel\\|>(?:commentary|analysis)\\s+to=functions$",
  "<\\|start\\|>assistant(\\s+to)",
  "<\\|start\\|>assistant(<\\|channel\\|>(?:commentary|analysis)\\s+to)",
];

export function applyGptOss(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const start = p.rule("start", p.literal("<|start|>assistant"));
    const end = p.rule("end", p.literal("<|end|>"));
    const content = p.rule("message-content", p.until("<|end|>"));
    const channel = p.cat(() => p.literal("<|channel|>"), () => p.alts(() => p.literal("commentary"), () => p.literal("analysis")));
    const constrainType = p.chars("[A-Za-z0-9_-]", 1, -1);
    // gpt-oss-20b sometimes prefixes channels with a stray commentary header
    const stray = p.optional(p.cat(() => p.literal("<|channel|>commentary"), () => p.optional(p.literal(" to=assistant"))));
    const startAnalysis = p.cat(stray, () => p.literal("<|channel|>analysis<|message|>"));
    if (req.reasoningFormat !== "none") p.rule("analysis", p.cat(startAnalysis, () => p.reasoning(content), end));
    else p.rule("analysis", p.content(p.cat(startAnalysis, content, end)));
    const analysis = p.ref("analysis");
    const preamble = p.rule("preamble", p.cat(() => p.literal("<|channel|>commentary<|message|>"), () => p.content(content), end));
    const finalMsg = p.rule("final", p.cat(stray, () => p.literal("<|channel|>final<|message|>"), () => p.content(content)));
    // unsolicited calls (built-in tools) are consumed
    const unsolicited = p.rule("unsolicited", p.atomic(p.cat(() => p.optional(channel), () => p.literal(" to="), content, end)));
    const any = p.rule("any", p.choice([preamble, analysis]));
    const constraint = () => p.optional(p.cat(() => p.space(), () => p.optional(p.literal("<|constrain|>")), constrainType));

    if (hasResponseFormat) {
      const responseFormat = p.rule(
        "response-format",
        p.cat(() => p.literal("<|channel|>final"), constraint, () => p.literal("<|message|>"), () => p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema))),
      );
      return p.cat(() => p.zeroOrMore(start.then(analysis)), start, responseFormat);
    }

    if (hasTools && req.toolChoice !== "none") {
      let choice = p.choice();
      for (const fn of fns) {
        const funcName = p.cat(() => p.literal(" to=functions."), () => p.toolName(p.literal(fn.name)));
        const c = constraint();
        const args = p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn)));
        // recipient in the role header, or in the channel header
        const inRole = p.tool(p.cat(() => p.toolOpen(p.cat(funcName, channel, c, () => p.literal("<|message|>"))), args));
        const inChannel = p.tool(p.cat(() => p.toolOpen(p.cat(channel, funcName, c, () => p.literal("<|message|>"))), args));
        choice = choice.or(p.rule(`tool-${fn.name}`, p.choice([inRole, inChannel])));
      }
      const toolCall = p.triggerRule("tool-call", choice);
      if (req.toolChoice === "required") return p.cat(() => p.zeroOrMore(start.then(any)), start, toolCall);
      return p.cat(() => p.zeroOrMore(start.then(any)), start, () => p.choice([toolCall, finalMsg]));
    }
    return p.cat(() => p.zeroOrMore(start.then(any)), start, () => p.choice([finalMsg, unsolicited]));
  });

  const grammarLazy = includeGrammar && !(hasResponseFormat || (hasTools && req.toolChoice === "required"));
  return {
    prompt,
    format: "peg-native",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? TRIGGERS.map(pattern) : [],
    preservedTokens: ["<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "<|channel|>analysis<|message|>",
    thinkingEndTags: ["<|end|>"],
    parser,
  };
}
