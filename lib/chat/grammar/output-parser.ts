/**
 * The whole output grammar from a template's format description and a request: what llama.cpp's
 * `autoparser::build_parser` builds. A JSON-schema response format wins over tools; tools (unless
 * tool_choice is "none" or the template cannot call tools) use their shape's parser; otherwise
 * reasoning then content. The generation prompt's part before the reasoning start is matched first.
 *
 * The description is structurally the template analysis (`analysis/types.ts`); only the fields
 * read here are required.
 */
import type { PegArena } from "../../peg/arena.js";
import type { PegParser } from "../../peg/builder.js";
import type { ChatTool } from "../tools.js";
import { buildChatPegParser, type ChatPegBuilder } from "./builder.js";
import {
  contentOnlyParser,
  jsonNativeToolsParser,
  reasoningParser,
  tagJsonToolsParser,
  tagTaggedToolsParser,
  trimWhitespace,
  type ToolArgumentsFormat,
  type ToolCallIdFormat,
  type ToolChoiceMode,
  type ToolFunctionFormat,
  type ToolSectionFormat,
  type ToolsContext,
} from "./formats.js";

export interface ChatOutputFormat {
  reasoning: { mode: "none" | "tag_based" | "tools_only" | (string & {}); start: string; end: string };
  content: { mode: "plain" | "always_wrapped" | "wrapped_with_reasoning" | (string & {}); start: string; end: string };
  tools: {
    format: ToolSectionFormat & { mode: "none" | "json_native" | "tag_with_json" | "tag_with_tagged" | (string & {}) };
    function: ToolFunctionFormat;
    arguments: ToolArgumentsFormat;
    callId: ToolCallIdFormat;
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
}

function toolsParser(p: ChatPegBuilder, f: ChatOutputFormat, ctx: ToolsContext): PegParser {
  const t = f.tools;
  switch (t.format.mode) {
    case "json_native":
      return jsonNativeToolsParser(p, ctx, t.format);
    case "tag_with_json":
      return tagJsonToolsParser(p, ctx, t.format, t.function, t.arguments, t.callId);
    case "tag_with_tagged":
      return tagTaggedToolsParser(p, ctx, t.format, t.function, t.arguments, t.callId);
    default:
      // The template seems to call tools but its format is unknown: tool calls cannot be parsed.
      return p.eps();
  }
}

/** Builds the parser of a whole model output. Nodes come in the reference's order (see `cat`). */
export function buildChatOutputParser(f: ChatOutputFormat, req: ChatOutputRequest): PegArena {
  return buildChatPegParser((p) => {
    // The reference's build context starts with an ε reasoning parser, then builds the real one.
    let reasoning = p.eps();
    const extracting = (req.extractReasoning ?? true) && f.reasoning.mode !== "none";
    reasoning =
      extracting && (f.reasoning.mode === "tag_based" || f.reasoning.mode === "tools_only") ? reasoningParser(p, f.reasoning.start, f.reasoning.end) : p.eps();
    let parser = p.eps();
    const wrapped = f.content.mode === "always_wrapped" && f.content.start !== "" && f.content.end !== "";
    const tools = req.tools ?? [];
    const choice = req.toolChoice ?? "auto";
    let pureContent = f.reasoning.mode === "none";
    if (req.jsonSchema && typeof req.jsonSchema === "object" && Object.keys(req.jsonSchema).length > 0) {
      const schema = req.jsonSchema;
      const responseFormat = p.rule("response-format", p.content(p.schema(p.json(), "response-format-schema", schema)));
      const S = () => p.space();
      parser = p.cat(
        reasoning,
        S,
        () => p.choice([p.cat(() => p.literal("```json"), S, responseFormat, S, () => p.literal("```")), p.cat(S, responseFormat, S)]),
        () => p.end(),
      );
      pureContent = false;
    } else if (tools.length > 0 && choice !== "none" && (req.supportsToolCalls ?? true)) {
      const ctx: ToolsContext = {
        tools,
        toolChoice: choice,
        parallel: req.parallelToolCalls ?? true,
        reasoning,
        ...(wrapped ? { contentStart: f.content.start, contentEnd: f.content.end } : {}),
      };
      parser = toolsParser(p, f, ctx);
      pureContent = false;
    } else {
      parser = contentOnlyParser(p, {
        reasoning,
        extractingReasoning: extracting,
        ...(wrapped ? { contentStart: f.content.start, contentEnd: f.content.end } : {}),
      });
    }
    const reasoningStart = trimWhitespace(f.reasoning.start);
    const body = parser;
    // C++ `prefix + parser` builds the prefix last; `prefix << parser` (sequenced) builds it first.
    return pureContent ? p.cat(() => p.prefix(req.generationPrompt ?? "", reasoningStart), body) : p.prefix(req.generationPrompt ?? "", reasoningStart).spaced(body);
  });
}
