/**
 * From a checked request to what one generation needs: the prompt, the parser (a `ChatPlan` for
 * the session) and the sampler's grammar with its triggers and preserved tokens. Built on
 * `applyChatTemplate`; the parts it does not offer are added here:
 * - a named tool_choice: apply with only that tool and "required";
 * - "calls only": the grammar is the lazy export (the call section alone) used eagerly;
 * - tools + response schema: one grammar that is either the calls or the schema's JSON, and a
 *   parser that tries the JSON first, then the calls;
 * - unenforceable / invalid tool schemas degrade per tool (see tool-schemas.ts);
 * - the generation prompt is removed from the front of an eager grammar (llama.cpp feeds it to the
 *   grammar as prefill; the native sampler starts at the output).
 */
import { createHash } from "node:crypto";

import { applyChatTemplate, type ApplyChatRequest, type AppliedChatPlan } from "../chat/apply/index.js";
import type { ChatParser, ChatPlan } from "../chat/plan.js";
import type { PromptSegment } from "../chat/prompt.js";
import type { TemplateLimits } from "../chat/template/limits.js";
import { toolParameters, type ChatTool } from "../chat/tools.js";
import type { PegParseOptions, PegParseResult } from "../peg/parse.js";
import { PegArena } from "../peg/arena.js";
import type { PegArenaJson } from "../peg/index.js";
import { alternativeGrammars, dropGenerationPrompt } from "./gbnf-edit.js";
import type { NormalizedChatRequest } from "./request.js";
import type { SamplingGrammar } from "./target.js";
import { enforceableSchema, sanitizeToolSchemas } from "./tool-schemas.js";

/**
 * Tries each parser in order; the first that does not fail wins (else the one that got furthest).
 * Every parse is lenient, the final one too, as llama.cpp's `common_chat_peg_parse` parses (so a
 * plain answer where calls were optional, or an output cut by max_tokens, maps instead of failing).
 */
export class AlternativeParser implements ChatParser {
  readonly arenas: readonly PegArena[];
  private readonly parsers: readonly { parse(input: string | Uint8Array, options?: PegParseOptions): PegParseResult }[];

  /** `streaming`: one stream parser per arena, for one growing output (memo reused between parses). */
  constructor(arenas: readonly PegArena[], streaming = false) {
    this.arenas = arenas;
    this.parsers = streaming ? arenas.map((a) => a.streamParser()) : arenas;
  }

  /** A parser for one generation: parse cost per piece does not grow with the output. */
  forOneOutput(): AlternativeParser {
    return new AlternativeParser(this.arenas, true);
  }

  parse(input: string | Uint8Array, options?: PegParseOptions): PegParseResult {
    let best: PegParseResult | undefined;
    for (const p of this.parsers) {
      const r = p.parse(input, { ...options, partial: true });
      if (r.type !== "fail") return r;
      if (best === undefined || r.end > best.end) best = r;
    }
    return best!;
  }
}

export type { SamplingGrammar };

/** Everything about a plan that can be written to JSON and read back (record/replay). */
export interface PlanRecord {
  format: string;
  generationPrompt: string;
  thinkingStartTag: string;
  thinkingEndTags: string[];
  additionalStops: string[];
  preservedTokens: string[];
  grammar: SamplingGrammar | null;
  /** One arena, or several tried in order (tools + response schema). */
  parsers: PegArenaJson[];
}

export interface CompletionPlan {
  prompt: string;
  /** The message text in `prompt` (tokenized without special-token parsing). */
  promptSegments: PromptSegment[];
  chat: ChatPlan;
  grammar: SamplingGrammar | null;
  warnings: string[];
  /** The plan as JSON (computed on demand: serializing the parser costs). */
  record(): PlanRecord;
}

interface StructuralPart {
  chat: Omit<ChatPlan, "prompt">;
  grammar: SamplingGrammar | null;
  warnings: string[];
  arenas: PegArena[];
}

interface ToolPart {
  /** Sanitized, and only the named one for a named tool_choice. */
  tools: ChatTool[];
  /** The response schema without the keywords the grammar cannot enforce. */
  schema: Record<string, unknown> | null;
  warnings: string[];
}

const CACHE_LIMIT = 32;
const cache = new Map<string, StructuralPart & ToolPart>();

export function clearPlanCache(): void {
  cache.clear();
}

function cacheKey(template: string, r: NormalizedChatRequest, specials: { bos: string; eos: string }): string {
  const h = createHash("sha256");
  h.update(template);
  h.update("\0");
  // Everything that shapes the parser or the grammar; the messages only shape the prompt.
  h.update(
    JSON.stringify([r.tools, r.toolChoice, r.namedTool, r.callsOnly, r.parallelToolCalls, r.responseSchema, r.reasoningFormat, r.chatTemplateKwargs, r.grammar, specials]),
  );
  return h.digest("hex");
}

function applyRequest(r: NormalizedChatRequest, tools: ChatTool[], specials: { bos: string; eos: string }): ApplyChatRequest {
  const enableThinking = r.chatTemplateKwargs?.enable_thinking;
  return {
    messages: r.messages,
    tools: tools.length > 0 ? tools : null,
    parallel_tool_calls: r.parallelToolCalls,
    ...(r.reasoningFormat !== undefined ? { reasoning_format: r.reasoningFormat } : {}),
    ...(typeof enableThinking === "boolean" ? { enable_thinking: enableThinking } : {}),
    ...(r.chatTemplateKwargs !== undefined ? { chat_template_kwargs: r.chatTemplateKwargs } : {}),
    bos_token: specials.bos,
    eos_token: specials.eos,
  };
}

/** The call section alone (the lazy export), sampled from the first token on. */
function callsOnlyGrammar(plan: AppliedChatPlan, tools: ChatTool[]): string {
  return plan.parser.toGbnf({ lazy: true, resolveRefs: tools.map((t) => toolParameters(t.function)) });
}

function eagerGrammar(plan: AppliedChatPlan): string {
  return dropGenerationPrompt(plan.grammar, plan.generationPrompt);
}

function chatPart(plan: AppliedChatPlan, parser: ChatParser, grammar: SamplingGrammar | null): Omit<ChatPlan, "prompt"> {
  return {
    format: plan.format,
    grammar: grammar?.gbnf ?? "",
    grammarLazy: grammar?.lazy ?? false,
    grammarTriggers: grammar?.triggers ?? [],
    preservedTokens: plan.preservedTokens,
    additionalStops: plan.additionalStops,
    generationPrompt: plan.generationPrompt,
    thinkingStartTag: plan.thinkingStartTag,
    thinkingEndTags: plan.thinkingEndTags,
    parser,
  };
}

/** Builds (or takes from the cache) the plan for one request on `template`. */
export function buildCompletionPlan(template: string, r: NormalizedChatRequest, specials: { bos: string; eos: string }, templateLimits?: TemplateLimits): CompletionPlan {
  const key = cacheKey(template, r, specials);
  const cached = cache.get(key);
  const toolPart: ToolPart =
    cached ??
    (() => {
      const { tools, warnings } = sanitizeToolSchemas(r.tools);
      const schema = r.responseSchema === null ? null : enforceableSchema(r.responseSchema, "response_format schema", warnings);
      return { tools: r.toolChoice === "function" ? tools.filter((t) => t.function.name === r.namedTool) : tools, schema, warnings };
    })();
  const activeTools = (): ChatTool[] => toolPart.tools;
  const warnings = toolPart.warnings;
  const useTools = r.toolChoice !== "none" && r.tools.length > 0;
  // With tool_choice "none" the template still shows the tools (as OpenAI does); nothing is sampled from them.
  const base = { ...applyRequest(r, useTools ? activeTools() : sanitizeToolSchemas(r.tools).tools, specials), ...(templateLimits ? { template_limits: templateLimits } : {}) };
  const toolChoice = r.toolChoice === "function" ? "required" : r.toolChoice;

  let prompt: string;
  let promptSegments: PromptSegment[];
  let part: StructuralPart;
  if (r.responseSchema !== null && useTools) {
    const schemaPlan = applyChatTemplate(template, { ...base, tool_choice: "none", response_format: { type: "json_schema", json_schema: { schema: toolPart.schema! } } });
    const toolsPlan = applyChatTemplate(template, { ...base, tool_choice: "required" });
    prompt = schemaPlan.prompt;
    promptSegments = schemaPlan.promptSegments ?? [];
    part =
      cached ??
      (() => {
        const grammar: SamplingGrammar | null = r.grammar
          ? { gbnf: alternativeGrammars(eagerGrammar(schemaPlan), callsOnlyGrammar(toolsPlan, activeTools())), lazy: false, triggers: [], prefill: "" }
          : null;
        const arenas = [schemaPlan.parser, toolsPlan.parser];
        return { chat: chatPart(toolsPlan, new AlternativeParser(arenas), grammar), grammar, warnings, arenas };
      })();
  } else {
    const plan = applyChatTemplate(template, {
      ...base,
      tool_choice: useTools ? toolChoice : "none",
      ...(r.responseSchema !== null ? { response_format: { type: "json_schema", json_schema: { schema: toolPart.schema! } } } : {}),
    });
    prompt = plan.prompt;
    promptSegments = plan.promptSegments ?? [];
    part =
      cached ??
      (() => {
        let grammar: SamplingGrammar | null = null;
        if (r.grammar && plan.grammar !== "") {
          if (useTools && r.callsOnly) grammar = { gbnf: callsOnlyGrammar(plan, activeTools()), lazy: false, triggers: [], prefill: "" };
          else if (plan.grammarLazy) grammar = { gbnf: plan.grammar, lazy: true, triggers: plan.grammarTriggers, prefill: "" };
          else grammar = { gbnf: eagerGrammar(plan), lazy: false, triggers: [], prefill: "" };
        }
        return { chat: chatPart(plan, new AlternativeParser([plan.parser]), grammar), grammar, warnings, arenas: [plan.parser] };
      })();
  }
  if (cached === undefined) {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, { ...part, ...toolPart });
  }
  // the segments belong to this request's prompt, never to the cached part
  const chat: ChatPlan = { ...part.chat, prompt, promptSegments };
  return {
    prompt,
    promptSegments,
    chat,
    grammar: part.grammar,
    warnings: [...part.warnings],
    record: () => ({
      format: chat.format,
      generationPrompt: chat.generationPrompt,
      thinkingStartTag: chat.thinkingStartTag,
      thinkingEndTags: chat.thinkingEndTags,
      additionalStops: chat.additionalStops,
      preservedTokens: chat.preservedTokens,
      grammar: part.grammar,
      parsers: part.arenas.map((a) => a.toJSON()),
    }),
  };
}

/** The session plan a record describes (no template, no model). */
export function planFromRecord(record: PlanRecord): ChatPlan {
  const arenas = record.parsers.map((j) => PegArena.fromJSON(j));
  return {
    prompt: "",
    format: record.format,
    grammar: record.grammar?.gbnf ?? "",
    grammarLazy: record.grammar?.lazy ?? false,
    grammarTriggers: record.grammar?.triggers ?? [],
    preservedTokens: record.preservedTokens,
    additionalStops: record.additionalStops,
    generationPrompt: record.generationPrompt,
    thinkingStartTag: record.thinkingStartTag,
    thinkingEndTags: record.thinkingEndTags,
    parser: new AlternativeParser(arenas),
  };
}
