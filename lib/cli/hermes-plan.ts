/**
 * The CLI's request plan until `applyChatTemplate` (template analysis) lands: the prompt comes from
 * the model's own template; the output format is the Hermes / Qwen 2.5 one
 * (`<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`) when the template writes it, and
 * plain content otherwise. The parser and the GBNF come from ONE PEG tree.
 */
import { buildChatPegParser } from "../chat/grammar/builder.js";
import { contentOnlyParser, jsonNativeToolsParser, type ToolChoiceMode } from "../chat/grammar/formats.js";
import { standardJsonTools } from "../chat/grammar/json-tools.js";
import type { ChatMessage } from "../chat/messages.js";
import { chatPlan, type ChatPlan } from "../chat/plan.js";
import type { ChatTool } from "../chat/tools.js";
import { renderChatTemplate } from "../chat/template/index.js";

const CALL_OPEN = "<tool_call>";
const CALL_CLOSE = "</tool_call>";

export interface HermesPlanRequest {
  template: string;
  messages: ChatMessage[];
  tools: ChatTool[];
  toolChoice: ToolChoiceMode;
  parallel: boolean;
  bosToken: string;
  eosToken: string;
  /** The model's tokenizer adds BOS/EOS itself (then the template's copies are stripped). */
  addBos: boolean;
  addEos: boolean;
  /** With toolChoice "required": the output is calls only (default: text may precede them, as in llama.cpp). */
  callsOnly?: boolean;
}

export function writesHermesToolCalls(template: string): boolean {
  return template.includes(CALL_OPEN) && template.includes(CALL_CLOSE);
}

export function hermesPlan(req: HermesPlanRequest): ChatPlan {
  const withTools = req.tools.length > 0 && req.toolChoice !== "none";
  const prompt = renderChatTemplate(req.template, {
    messages: req.messages,
    tools: req.tools.length > 0 ? req.tools : null,
    add_generation_prompt: true,
    bos_token: req.bosToken,
    eos_token: req.eosToken,
    add_bos: req.addBos,
    add_eos: req.addEos,
  });
  if (!withTools || !writesHermesToolCalls(req.template)) {
    return chatPlan(buildChatPegParser((p) => contentOnlyParser(p, { reasoning: p.eps(), extractingReasoning: false })), {
      prompt,
      format: "content-only",
    });
  }
  const section = { sectionStart: "", sectionEnd: "", perCallStart: CALL_OPEN, perCallEnd: CALL_CLOSE };
  const parser = buildChatPegParser((p) => {
    if (req.toolChoice === "required" && req.callsOnly) {
      // Only calls, no text before them: what a small or random-weight model needs to show a call.
      const call = standardJsonTools(p, { tools: req.tools, parallel: false, force: true, sectionStart: section.perCallStart, sectionEnd: section.perCallEnd });
      return p.seq(p.triggerRule("tool-calls", p.oneOrMore(call.then(p.space()))), p.end());
    }
    return jsonNativeToolsParser(p, { tools: req.tools, toolChoice: req.toolChoice, parallel: req.parallel, reasoning: p.eps() }, section);
  });
  const lazy = req.toolChoice === "auto";
  return chatPlan(parser, {
    prompt,
    format: "hermes",
    grammar: parser.toGbnf({ lazy }),
    grammarLazy: lazy,
    grammarTriggers: lazy ? [{ type: "word", value: CALL_OPEN }] : [],
    preservedTokens: [CALL_OPEN, CALL_CLOSE],
  });
}
