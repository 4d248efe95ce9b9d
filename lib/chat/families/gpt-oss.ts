/**
 * GPT-OSS (Harmony): messages `<|start|>assistant<|channel|>analysis<|message|>...<|end|>`
 * (reasoning), `<|channel|>commentary<|message|>...<|end|>` (preamble), `<|channel|>final<|message|>`
 * (the answer); a call names its recipient ` to=functions.NAME` in the role or the channel header,
 * optionally with `<|constrain|>json`, then `<|message|>{json}`. As `common_chat_params_init_gpt_oss`;
 * the reference passes reasoning as `thinking` (and drops the content of a message with calls);
 * its `developer` role is kept, and an inference prompt's last turn ends with `<|end|>`.
 */
import { sliceMarks } from "../../jinja/index.js";
import type { PegParser } from "../../peg/builder.js";
import { toolParameters } from "../tools.js";
import type { ChatFamily } from "./family.js";
import { familyPlan, grammarMode, pattern, shapeOf, toolChoice } from "./helpers.js";

const TRIGGERS = [
  "^\\s+to$",
  "^<\\|channel\\|>(?:commentary|analysis)\\s+to=functions$",
  "<\\|start\\|>assistant(\\s+to)",
  "<\\|start\\|>assistant(<\\|channel\\|>(?:commentary|analysis)\\s+to)",
];

export const gptOss: ChatFamily = {
  name: "gpt-oss",
  detect: (src) => src.includes("<|channel|>"),
  keepsDeveloperRole: true,

  finishPrompt(prompt, marks, addGenerationPrompt) {
    // during inference the last turn must end with <|end|>, not the training-time <|return|>
    const at = addGenerationPrompt ? -1 : prompt.lastIndexOf("<|return|>");
    if (at === -1) return { prompt, marks };
    const after = at + "<|return|>".length;
    const head = sliceMarks(marks, 0, at) ?? [];
    const tail = (sliceMarks(marks, after, prompt.length) ?? []).map((x) => x + at + "<|end|>".length);
    return { prompt: prompt.slice(0, at) + "<|end|>" + prompt.slice(after), marks: [...head, ...tail] };
  },

  prepareMessages: (messages) =>
    messages.map((m) => {
      if (typeof m.reasoning_content !== "string") return m;
      const out: Record<string, unknown> = { ...m, thinking: m.reasoning_content };
      if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) delete out.content;
      return out;
    }),

  plan({ req }) {
    const { fns, useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      build(p) {
        const start = p.rule("start", p.literal("<|start|>assistant"));
        const end = p.rule("end", p.literal("<|end|>"));
        const content = p.rule("message-content", p.until("<|end|>"));
        const channel = p.seq("<|channel|>", p.alt("commentary", "analysis"));
        const constrainType = p.chars("[A-Za-z0-9_-]", 1, -1);
        // gpt-oss-20b sometimes prefixes channels with a stray commentary header
        const stray = p.optional(p.seq("<|channel|>commentary", p.optional(p.literal(" to=assistant"))));
        const startAnalysis = p.seq(stray, "<|channel|>analysis<|message|>");
        if (extractReasoning) p.rule("analysis", p.seq(startAnalysis, p.reasoning(content), end));
        else p.rule("analysis", p.content(p.seq(startAnalysis, content, end)));
        const analysis = p.ref("analysis");
        const preamble = p.rule("preamble", p.seq("<|channel|>commentary<|message|>", p.content(content), end));
        const finalMsg = p.rule("final", p.seq(stray, "<|channel|>final<|message|>", p.content(content)));
        // unsolicited calls (built-in tools) are consumed
        const unsolicited = p.rule("unsolicited", p.atomic(p.seq(p.optional(channel), " to=", content, end)));
        const any = p.rule("any", p.choice([preamble, analysis]));
        const constraint = (): PegParser => p.optional(p.seq(p.space(), p.optional(p.literal("<|constrain|>")), constrainType));

        if (hasResponseFormat) {
          const responseFormat = p.rule(
            "response-format",
            p.seq("<|channel|>final", constraint(), "<|message|>", p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema))),
          );
          return { root: p.seq(p.zeroOrMore(start.then(analysis)), start, responseFormat) };
        }
        if (useTools) {
          const call = toolChoice(p, fns, (fn) => {
            const funcName = p.seq(" to=functions.", p.toolName(p.literal(fn.name)));
            const c = constraint();
            const args = p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, toolParameters(fn)));
            // recipient in the role header, or in the channel header
            const inRole = p.tool(p.seq(p.toolOpen(p.seq(funcName, channel, c, "<|message|>")), args));
            const inChannel = p.tool(p.seq(p.toolOpen(p.seq(channel, funcName, c, "<|message|>")), args));
            return p.choice([inRole, inChannel]);
          });
          const toolCall = p.triggerRule("tool-call", call);
          // calls only: the analysis (reasoning) messages may come first, no preamble or answer
          const callsOnly = p.seq(p.zeroOrMore(start.then(analysis)), start, toolCall);
          if (required) return { root: p.seq(p.zeroOrMore(start.then(any)), start, toolCall), callsOnly };
          return { root: p.seq(p.zeroOrMore(start.then(any)), start, p.choice([toolCall, finalMsg])), callsOnly };
        }
        return { root: p.seq(p.zeroOrMore(start.then(any)), start, p.choice([finalMsg, unsolicited])) };
      },
      grammar: grammarMode(include, !(hasResponseFormat || (useTools && required))),
      triggers: include ? TRIGGERS.map(pattern) : [],
      preservedTokens: ["<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>"],
      thinkingStartTag: "<|channel|>analysis<|message|>",
      thinkingEndTags: ["<|end|>"],
    });
  },
};
