/**
 * `llamapeg analyze <template.jinja|model.gguf>`: the template analysis (markers, tool-call syntax,
 * preserved tokens) and the grammar `llamapeg chat` would sample with for a tool set. Reads a GGUF's
 * template with the pure-TS GGUF reader: no native code, no weights loaded.
 */
import { readFileSync } from "node:fs";

import { analyzeTemplate } from "../chat/analysis/index.js";
import type { ChatTool } from "../chat/tools.js";
import { LlamapegError } from "../errors.js";
import { getGgufNumber, getGgufString, ggufValueToJs, readGgufFileSync } from "../gguf/index.js";
import { buildCompletionPlan } from "../openai/plan.js";
import { normalizeChatRequest } from "../openai/request.js";
import { parseFlags, stringFlag, toolChoiceFlag } from "./args.js";
import { DEMO_TOOLS } from "./demo-tools.js";
import { ggufModelFacts, summarizeModel, type ModelFacts } from "./model-summary.js";
import { readToolsFile } from "./tools-file.js";
import { UsageError } from "./usage-error.js";

export const ANALYZE_SUMMARY = "a chat template's analysis and the grammar for a tool set";

export const ANALYZE_USAGE = `llamapeg analyze <template.jinja | model.gguf> [options]
  --template-name NAME  a named template of the GGUF (e.g. tool_use)
  --tools FILE          OpenAI tools JSON array (default: the demo set; "none": no tools)
  --tool-choice MODE    auto | required | none | <tool name> (default auto)
  --calls-only          the same as --tool-choice required
  --json                one JSON object: {analysis, plan}`;

interface TemplateSource {
  template: string;
  bos: string;
  eos: string;
  /** For a GGUF: what the header says about the model. */
  model?: ModelFacts;
}

function tokenText(tokens: unknown, id: number | undefined): string {
  return Array.isArray(tokens) && id !== undefined && typeof tokens[id] === "string" ? (tokens[id] as string) : "";
}

export function readTemplateSource(path: string, name?: string): TemplateSource {
  if (!path.endsWith(".gguf")) {
    try {
      return { template: readFileSync(path, "utf8"), bos: "", eos: "" };
    } catch (e) {
        const why = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message;
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `cannot read ${path}: ${why}`, { where: path });
    }
  }
  const file = readGgufFileSync(path);
  const key = name === undefined ? "tokenizer.chat_template" : `tokenizer.chat_template.${name}`;
  const template = getGgufString(file, key);
  if (template === undefined) throw new LlamapegError("ERR_INVALID_ARGUMENT", `${path} has no ${key}`, { where: path });
  const tokensValue = file.metadata.get("tokenizer.ggml.tokens");
  const tokens = tokensValue === undefined ? undefined : ggufValueToJs(tokensValue);
  return {
    template,
    bos: tokenText(tokens, getGgufNumber(file, "tokenizer.ggml.bos_token_id")),
    eos: tokenText(tokens, getGgufNumber(file, "tokenizer.ggml.eos_token_id")),
    model: ggufModelFacts(file, path),
  };
}

export async function analyzeCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(
    argv,
    {
      "template-name": { type: "string" },
      tools: { type: "string" },
      "tool-choice": { type: "string" },
      "calls-only": { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    "analyze",
  );
  if (values.help) {
    console.log(ANALYZE_USAGE);
    return;
  }
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? "expected a template or GGUF file" : `expected one file (got ${positionals.length})`, "analyze");
  const src = readTemplateSource(positionals[0]!, stringFlag(values, "template-name"));
  const toolsPath = stringFlag(values, "tools");
  const tools: ChatTool[] = toolsPath === undefined ? DEMO_TOOLS : readToolsFile(toolsPath);
  const choice = toolChoiceFlag(values, "auto", "analyze");
  const toolChoice = ["auto", "required", "none"].includes(choice) ? choice : { type: "function", function: { name: choice } };
  const analysis = analyzeTemplate(src.template, { bosToken: src.bos, eosToken: src.eos });
  const request = normalizeChatRequest({
    messages: [{ role: "user", content: "hi" }],
    ...(tools.length > 0 ? { tools, tool_choice: toolChoice as never } : {}),
  });
  const plan = buildCompletionPlan(src.template, request, { bos: src.bos, eos: src.eos });
  if (values.json === true) {
    const { parsers: _parsers, ...record } = plan.record();
    console.log(JSON.stringify({ ...(src.model !== undefined ? { model: src.model } : {}), analysis, plan: { ...record, warnings: plan.warnings } }, null, 2));
    return;
  }
  const t = analysis.tools.format;
  const lines = [
    ...(src.model !== undefined ? [`model         ${summarizeModel(src.model)}`] : []),
    `template      sha256 ${analysis.templateHash.slice(0, 16)}…`,
    `turns         user ${JSON.stringify(analysis.userStart)} · assistant ${JSON.stringify(analysis.assistantStart)}`,
    `reasoning     ${analysis.reasoning.mode}${analysis.reasoning.mode !== "none" ? ` ${JSON.stringify(analysis.reasoning.start)} … ${JSON.stringify(analysis.reasoning.end)}` : ""}`,
    `content       ${analysis.content.mode}`,
    `tool calls    ${t.mode}${t.mode !== "none" ? ` section ${JSON.stringify(t.sectionStart)} … ${JSON.stringify(t.sectionEnd)} · call ${JSON.stringify(t.perCallStart)} … ${JSON.stringify(t.perCallEnd)}` : ""}`,
    `preserved     ${JSON.stringify(analysis.preservedTokens)}`,
    `stops         ${JSON.stringify(analysis.additionalStops)}`,
    `corrections   ${analysis.corrections.join(", ") || "none"}`,
    `plan format   ${plan.chat.format} · generation prompt ${JSON.stringify(plan.chat.generationPrompt)}`,
    `grammar       ${plan.grammar === null ? "none" : plan.grammar.lazy ? `lazy, triggers ${JSON.stringify(plan.grammar.triggers)}` : "from the first token"}`,
    ...plan.warnings.map((w) => `warning       ${w}`),
  ];
  console.log(lines.join("\n"));
  if (plan.grammar !== null) console.log(`\n${plan.grammar.gbnf}`);
}
