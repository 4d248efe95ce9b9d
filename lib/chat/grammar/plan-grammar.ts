/**
 * The sampling grammar of a plan, from the same tree that parses the output: llama.cpp's
 * `peg_generator::generate_parser` grammar step. A grammar is emitted for a JSON-schema response
 * format (applied from the start), or for tools when `tool_choice` is "required" (from the start)
 * or "auto" with a marker to trigger on (lazy: only once the model writes the section or call
 * marker, so it can answer in plain text first).
 */
import type { PegArena } from "../../peg/arena.js";
import type { SchemaWarning, UnsupportedMode } from "../../json-schema/index.js";
import type { GrammarTrigger, SamplingGrammar } from "../plan.js";
import { toolFunctions, toolParameters, type ChatTool } from "../tools.js";
import type { ChatOutputSyntax, ChatOutputRequest } from "./output-parser.js";


export interface ChatGrammarOptions {
  /** Schema keywords the grammar cannot enforce: fail (default) or leave out with a warning. */
  unsupported?: UnsupportedMode;
  warnings?: SchemaWarning[];
}

/** Whether the analysis path's tree constrains sampling, lazily or not, and its triggers. */
export function chatGrammarMode(syntax: ChatOutputSyntax, req: ChatOutputRequest): { include: boolean; lazy: boolean; triggers: GrammarTrigger[] } {
  const tools = req.tools ?? [];
  const choice = req.toolChoice ?? "auto";
  const hasTools = syntax.tools.format.mode !== "none" && tools.length > 0;
  const f = syntax.tools.format;
  const trigger = f.sectionStart !== "" ? f.sectionStart : f.perCallStart;
  const schema = req.jsonSchema;
  const hasResponseFormat = schema !== null && schema !== undefined && typeof schema === "object" && Object.keys(schema).length > 0;
  const include = hasResponseFormat || (hasTools && ((choice === "auto" && trigger !== "") || choice === "required"));
  if (!include) return { include: false, lazy: false, triggers: [] };
  const lazy = !hasResponseFormat && choice === "auto";
  const triggers: GrammarTrigger[] = [];
  if (lazy) {
    triggers.push({ type: "word", value: trigger });
    // Models that echo the OpenAI wrapper start their call with it.
    if (f.openaiWrapperTrigger) triggers.push({ type: "word", value: '{"type": "function",' });
  }
  return { include, lazy, triggers };
}

/** The grammar, laziness and triggers for `arena` (built by `buildChatOutputParser(syntax, req)`); null for none. No prefill: this path has no generation prompt. */
export function buildChatGrammar(arena: PegArena, syntax: ChatOutputSyntax, req: ChatOutputRequest, options: ChatGrammarOptions = {}): SamplingGrammar | null {
  const { include, lazy, triggers } = chatGrammarMode(syntax, req);
  if (!include) return null;
  const schema = lazy ? null : (req.jsonSchema ?? null);
  return { gbnf: toolsGbnf(arena, req.tools ?? [], schema !== null && Object.keys(schema).length > 0 ? schema : null, lazy, options), lazy, triggers, prefill: "" };
}

/**
 * The GBNF of `arena` with the tools' parameter schemas (then the response schema, if any)
 * registered first, as chat.cpp's `build_grammar` calls do; the specialized handlers use it too.
 */
export function toolsGbnf(arena: PegArena, tools: readonly ChatTool[], responseSchema: Record<string, unknown> | null, lazy: boolean, options: ChatGrammarOptions = {}): string {
  const resolveRefs: unknown[] = toolFunctions(tools).map((fn) => toolParameters(fn));
  if (responseSchema !== null) resolveRefs.push(responseSchema);
  return arena.toGbnf({
    lazy,
    resolveRefs,
    ...(options.unsupported === undefined ? {} : { unsupported: options.unsupported }),
    ...(options.warnings === undefined ? {} : { warnings: options.warnings }),
  });
}
