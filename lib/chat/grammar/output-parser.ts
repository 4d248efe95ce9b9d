/**
 * The whole output grammar from a template's syntax description and a request: what llama.cpp's
 * `autoparser::build_parser` builds. A JSON-schema response format wins over tools; tools (unless
 * tool_choice is "none" or the template cannot call tools) use their shape's parser; otherwise
 * reasoning then content. The generation prompt's part before the reasoning start is matched first.
 *
 * The description is structurally the template analysis (`analysis/types.ts`); only the fields
 * read here are required.
 */
import type { PegArena } from "../../peg/arena.js";
import type { PegParser } from "../../peg/builder.js";
import { trimWhitespace } from "../normalize.js";
import type { ChatTool } from "../tools.js";
import { buildChatPegParser, type ChatPegBuilder } from "./builder.js";
import {
  type ToolsTree,
  contentOnlyParser,
  jsonNativeToolsParser,
  reasoningParser,
  tagJsonToolsParser,
  tagTaggedToolsParser,
  type ToolArgumentsSyntax,
  type ToolCallIdSyntax,
  type ToolChoiceMode,
  type ToolFunctionSyntax,
  type ToolSectionSyntax,
  type ToolsContext,
} from "./syntax-parsers.js";

/** How a template spells its output: the fields of the template analysis the generator reads. */
export interface ChatOutputSyntax {
  reasoning: { mode: "none" | "tag_based" | "tools_only" | (string & {}); start: string; end: string };
  content: { mode: "plain" | "always_wrapped" | "wrapped_with_reasoning" | (string & {}); start: string; end: string };
  tools: {
    /** The tool section's syntax; `format` is the analysis field's name (llama.cpp's `analyze_tools::format`). */
    format: ToolSectionSyntax & { mode: "none" | "json_native" | "tag_with_json" | "tag_with_tagged" | (string & {}) };
    function: ToolFunctionSyntax;
    arguments: ToolArgumentsSyntax;
    callId: ToolCallIdSyntax;
  };
}

export interface ChatOutputRequest {
  tools?: readonly ChatTool[];
  toolChoice?: ToolChoiceMode;
  /** Default true, as the reference's generation params. */
  parallelToolCalls?: boolean;
  /** A JSON Schema response format. */
  jsonSchema?: Record<string, unknown> | null;
  /** reasoning_format != none: split reasoning out of the content. Default true. */
  extractReasoning?: boolean;
  /** The template can render tool calls (caps). Default true. */
  supportsToolCalls?: boolean;
  /** The end of the prompt the output continues. */
  generationPrompt?: string;
  /** Python literals and the declaration order in tagged arguments (off: as the reference). Default false. */
  extended?: boolean;
}

function toolsParser(p: ChatPegBuilder, f: ChatOutputSyntax, ctx: ToolsContext): ToolsTree | null {
  const t = f.tools;
  switch (t.format.mode) {
    case "json_native":
      return jsonNativeToolsParser(p, ctx, t.format);
    case "tag_with_json":
      return tagJsonToolsParser(p, ctx, t.format, t.function, t.arguments, t.callId);
    case "tag_with_tagged":
      return tagTaggedToolsParser(p, ctx, t.format, t.function, t.arguments, t.callId);
    default:
      // The template seems to call tools but its syntax is unknown: tool calls cannot be parsed.
      return null;
  }
}

/** The whole output tree, built into `p` (and, with tools, the calls-only variant). */
export interface ChatOutputTree {
  root: PegParser;
  callsOnly?: PegParser;
}

/** Builds the tree of a whole model output into `p` (what `buildChatOutputParser` builds alone). */
export function buildChatOutputTree(p: ChatPegBuilder, f: ChatOutputSyntax, req: ChatOutputRequest): ChatOutputTree {
  const extracting = (req.extractReasoning ?? true) && f.reasoning.mode !== "none";
  const reasoning = extracting && (f.reasoning.mode === "tag_based" || f.reasoning.mode === "tools_only") ? reasoningParser(p, f.reasoning.start, f.reasoning.end) : p.eps();
  const wrapped = f.content.mode === "always_wrapped" && f.content.start !== "" && f.content.end !== "";
  const tools = req.tools ?? [];
  const choice = req.toolChoice ?? "auto";
  const prefix = () => p.prefix(req.generationPrompt ?? "", trimWhitespace(f.reasoning.start));
  if (req.jsonSchema && typeof req.jsonSchema === "object" && Object.keys(req.jsonSchema).length > 0) {
    const responseFormat = p.rule("response-format", p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)));
    const body = p.seq(reasoning, p.space(), p.choice([p.seq("```json", p.space(), responseFormat, p.space(), "```"), p.seq(p.space(), responseFormat, p.space())]), p.end());
    return { root: prefix().spaced(body) };
  }
  if (tools.length > 0 && choice !== "none" && (req.supportsToolCalls ?? true)) {
    const ctx: ToolsContext = {
      tools,
      toolChoice: choice,
      parallel: req.parallelToolCalls ?? true,
      reasoning,
      ...(wrapped ? { contentStart: f.content.start, contentEnd: f.content.end } : {}),
      ...(req.extended ? { extended: true } : {}),
    };
    const t = toolsParser(p, f, ctx);
    if (t === null) return { root: prefix().spaced(p.eps()) };
    const gen = prefix();
    return { root: gen.spaced(t.parser), callsOnly: p.seq(gen, t.callsOnly) };
  }
  const body = contentOnlyParser(p, {
    reasoning,
    extractingReasoning: extracting,
    ...(wrapped ? { contentStart: f.content.start, contentEnd: f.content.end } : {}),
  });
  // no reasoning markers: the prefix and the content in one sequence (the reference's `prefix + parser`)
  return { root: f.reasoning.mode === "none" ? p.seq(prefix(), body) : prefix().spaced(body) };
}

/** Builds the parser of a whole model output (the reference's `autoparser::build_parser`). */
export function buildChatOutputParser(f: ChatOutputSyntax, req: ChatOutputRequest): PegArena {
  return buildChatPegParser((p) => buildChatOutputTree(p, f, req).root);
}
