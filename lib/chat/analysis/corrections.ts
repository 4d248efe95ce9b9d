/**
 * Targeted corrections applied after the analysis, for templates whose renderings mislead it or
 * that render less than the model emits. Each is keyed on a feature of the template source (a
 * literal it contains), exactly as the reference's post-analysis workarounds are, and each one
 * that fires is named in `analysis.corrections`. docs/analysis.md lists them with the templates
 * they affect.
 */
import { trimWhitespace } from "../normalize.js";
import { toBytes } from "./text.js";
import type { TemplateAnalysis } from "./types.js";

interface Correction {
  name: string;
  /** `src` is the template source as a byte string. */
  applies(src: string, a: TemplateAnalysis): boolean;
  apply(a: TemplateAnalysis): void;
}

const has = (src: string, text: string) => src.includes(toBytes(text));

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";

const CORRECTIONS: Correction[] = [
  {
    // old Qwen/DeepSeek reasoning templates drop reasoning from history, but the model still thinks
    name: "old-qwen-deepseek-thinking",
    applies: (src, a) =>
      has(src, "content.split('</think>')") &&
      !has(src, "reasoning_content") &&
      !has(src, "<SPECIAL_12>") &&
      a.reasoning.mode === "none",
    apply(a) {
      a.reasoning = { mode: "tag_based", start: THINK_OPEN, end: THINK_CLOSE };
      a.preservedTokens.push(THINK_OPEN, THINK_CLOSE);
    },
  },
  {
    // Granite 3.3: reasoning and response markers are only named in the system prompt text
    name: "granite-3.3",
    applies: (src) =>
      has(src, "Write your thoughts between <think></think> and write your response between <response></response>"),
    apply(a) {
      a.reasoning = { mode: "tag_based", start: THINK_OPEN, end: THINK_CLOSE };
      a.preservedTokens.push(THINK_OPEN, THINK_CLOSE);
      a.content = { ...a.content, mode: "wrapped_with_reasoning", start: "<response>", end: "</response>" };
      a.preservedTokens.push("<response>", "</response>");
    },
  },
  {
    // Command R+: the reply is wrapped in chatbot-turn tokens the probes cannot isolate
    name: "cohere-command-r-plus",
    applies: (src, a) => has(src, "<|CHATBOT_TOKEN|>") && has(src, "<|END_OF_TURN_TOKEN|>") && a.content.start === "",
    apply(a) {
      a.content = { ...a.content, mode: "always_wrapped", start: "<|CHATBOT_TOKEN|>", end: "<|END_OF_TURN_TOKEN|>" };
      a.preservedTokens.push("<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>");
      a.userStart = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>";
    },
  },
  {
    // Functionary v3.1: `<function=name>{...}</function>` with no section delimiter
    name: "functionary-v3.1",
    applies: (src) =>
      has(src, 'set has_code_interpreter = tools | selectattr("type", "equalto", "code_interpreter") | list | length > 0'),
    apply(a) {
      a.content.mode = "plain";
      a.content.end = "";
      a.tools.function.namePrefix = "";
      a.tools.format.sectionStart = "";
      a.tools.format.sectionEnd = "";
      a.tools.format.perCallStart = "<function=";
      a.tools.format.perCallEnd = "</function>";
      a.tools.function.close = "";
      a.preservedTokens = ["<|eot_id|>", "<|eom_id|>", "<function=", ">", "</function>"];
    },
  },
  {
    // DeepSeek-R1-Distill-Qwen: the call header renders the tool *type* before the name
    name: "deepseek-r1-distill-qwen",
    applies: (src) =>
      has(src, "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'"),
    apply(a) {
      a.tools.format.sectionStart = toBytes("<｜tool▁calls▁begin｜>");
      a.tools.format.sectionEnd = toBytes("<｜tool▁calls▁end｜>");
      a.tools.format.perCallStart = toBytes("<｜tool▁call▁begin｜>function");
      a.tools.function.namePrefix = toBytes("<｜tool▁sep｜>");
      a.tools.format.perCallEnd = toBytes("<｜tool▁call▁end｜>");
      a.tools.function.close = "```";
    },
  },
  {
    // Nemotron Nano v2: `<TOOLCALL>[...]</TOOLCALL>` and `<SPECIAL_11>` role tokens
    name: "nemotron-nano-v2",
    applies: (src) => has(src, "<SPECIAL_10>") && has(src, "<SPECIAL_11>") && has(src, "<SPECIAL_12>") && has(src, "<TOOL_RESPONSE>"),
    apply(a) {
      const f = a.tools.format;
      f.mode = "json_native";
      f.sectionStart = "";
      f.sectionEnd = "";
      f.perCallStart = "<TOOLCALL>";
      f.perCallEnd = "</TOOLCALL>";
      f.toolsArrayWrapped = true;
      a.content = { ...a.content, mode: "plain", start: "", end: "" };
      a.reasoning = { mode: "tag_based", start: "<think>\n", end: THINK_CLOSE };
      a.assistantStart = "<SPECIAL_11>Assistant";
      a.userStart = "<SPECIAL_11>User";
      a.preservedTokens = ["<SPECIAL_11>", THINK_CLOSE, "<TOOLCALL>", "</TOOLCALL>"];
    },
  },
  {
    name: "fireworks-firefunction-v2",
    applies: (src) =>
      has(
        src,
        "{%- set system_prompt = '<|start_header_id|>' + 'system' + '<|end_header_id|>\\n\\n' + message['content'] | trim + '\\n' + system_prompt_suffix + '<|eot_id|>' -%}",
      ),
    apply(a) {
      a.assistantStart = "<|start_header_id|>assistant<|end_header_id|>";
      a.userStart = "<|start_header_id|>user<|end_header_id|>";
    },
  },
  {
    name: "solar-open",
    applies: (src) => has(src, "<|begin|>assistant<|think|><|end|>"),
    apply(a) {
      a.assistantStart = "<|begin|>assistant";
    },
  },
  {
    name: "apriel-1.6",
    applies: (src) => has(src, "if not loop.last and '[BEGIN FINAL RESPONSE]' in asst_text"),
    apply(a) {
      a.userStart = "<|begin_user|>";
      a.assistantStart = "<|begin_assistant|>";
    },
  },
  {
    // the system prompt asks for `{"name": ..., "parameters": ...}`; models answer with the OpenAI wrapper too
    name: "json-name-parameters-instruction",
    applies: (src) => has(src, 'Respond in the format {"name": function name') && has(src, "Do not use variables."),
    apply(a) {
      a.tools.format.openaiWrapperTrigger = true;
    },
  },
  {
    // Laguna: the template's formatting newlines after tags are not emitted by the model
    name: "laguna",
    applies: (src) => has(src, "laguna_glm_thinking"),
    apply(a) {
      a.reasoning.start = trimWhitespace(a.reasoning.start);
      a.reasoning.end = trimWhitespace(a.reasoning.end);
      const args = a.tools.arguments;
      args.valuePrefix = trimWhitespace(args.valuePrefix);
      args.valueSuffix = trimWhitespace(args.valueSuffix);
      args.separator = trimWhitespace(args.separator);
      args.tolerateIntertagWhitespace = true;
      // after tool calls the model may spell `</assistant>` as text tokens
      a.additionalStops.push("</assistant>");
    },
  },
  {
    name: "bailing-v3",
    applies: (src) => has(src, "Bailing V3 chat template"),
    apply(a) {
      a.tools.arguments.valueSuffix = trimWhitespace(a.tools.arguments.valueSuffix);
      a.tools.arguments.tolerateIntertagWhitespace = true;
    },
  },
];

/** Applies every matching correction in order (strings in `a` are byte strings); returns their names. */
export function applyCorrections(src: string, a: TemplateAnalysis): string[] {
  const applied: string[] = [];
  for (const c of CORRECTIONS) {
    if (c.applies(src, a)) {
      c.apply(a);
      applied.push(c.name);
    }
  }
  return applied;
}

/** The names of all corrections, in the order they are tried. */
export const CORRECTION_NAMES: readonly string[] = CORRECTIONS.map((c) => c.name);
