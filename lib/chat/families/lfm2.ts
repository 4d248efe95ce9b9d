/**
 * LFM2 / LFM2.5: `<think>` reasoning (when the template knows it), content, then
 * `<|tool_call_start|>[name(k="v", n=1)]<|tool_call_end|>` (Python-style calls, JSON literals
 * allowed). LFM2 also preserves its tool-list tokens. As `common_chat_params_init_lfm2`; the
 * reference passes reasoning as `thinking`.
 */
import { pythonStyleToolCalls } from "../grammar/python-tools.js";
import type { ChatFamily, FamilyName } from "./family.js";
import { callsAfterReasoning, familyPlan, grammarMode, shapeOf, word } from "./helpers.js";

const CALL_START = "<|tool_call_start|>";
const CALL_END = "<|tool_call_end|>";
const GEN_PROMPT = "<|im_start|>assistant\n";

function lfm2Family(name: FamilyName, detect: (src: string) => boolean, toolListTokens: boolean): ChatFamily {
  return {
    name,
    detect,
    prepareMessages: (messages) => messages.map((m) => (typeof m.reasoning_content === "string" ? { ...m, thinking: m.reasoning_content } : m)),
    plan({ source, req }) {
      const { useTools, hasResponseFormat, required } = shapeOf(req);
      const extractReasoning = req.reasoningFormat !== "none" && source.includes("<think>");
      const include = hasResponseFormat || useTools;
      const preserved = [CALL_START, CALL_END, "<think>", "</think>"];
      if (toolListTokens) preserved.push("<|tool_list_start|>", "<|tool_list_end|>");
      return familyPlan({
        build(p) {
          const gen = p.literal(GEN_PROMPT);
          const end = p.end();
          const reasoning = extractReasoning ? p.optional(p.seq("<think>", p.reasoning(p.until("</think>")), "</think>")) : p.eps();
          if (!useTools) {
            if (hasResponseFormat) return { root: p.seq(gen, reasoning, p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)), end) };
            return { root: p.seq(gen, reasoning, p.content(p.rest()), end) };
          }
          const toolCalls = p.rule(
            "tool-calls",
            p.triggerRule("tool-call", p.seq(CALL_START, pythonStyleToolCalls(p, { tools: req.tools ?? [], parallel: req.parallelToolCalls, allowJsonLiterals: true, emptyArgs: !req.referenceMode, rawSingleQuoted: !req.referenceMode }), CALL_END)),
          );
          const content = p.content(p.until(CALL_START));
          return { root: p.seq(gen, reasoning, content, toolCalls, end), callsOnly: p.seq(gen, callsAfterReasoning(p, reasoning, toolCalls), end) };
        },
        grammar: grammarMode(include, !(hasResponseFormat || (useTools && required))),
        triggers: include ? [word(CALL_START)] : [],
        preservedTokens: preserved,
        thinkingStartTag: "<think>",
        thinkingEndTags: ["</think>"],
      });
    },
  };
}

export const lfm2 = lfm2Family("lfm2", (src) => src.includes("<|tool_list_start|>") && src.includes("<|tool_list_end|>"), true);
export const lfm25 = lfm2Family("lfm2.5", (src) => src.includes("List of tools: [") && !src.includes("<|tool_list_start|>"), false);
