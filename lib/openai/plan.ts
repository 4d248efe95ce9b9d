/**
 * From a checked request to what one generation needs: the chat plan (built whole by
 * `applyChatTemplate`), the sampler's grammar, and the plan as JSON for record / replay. Nothing
 * about the plan is decided here.
 */
import { applyNormalized, type AppliedChatPlan } from "../chat/apply/index.js";
import type { ChatPlan } from "../chat/plan.js";
import type { PromptSegment } from "../chat/prompt.js";
import type { TemplateLimits } from "../chat/template/limits.js";
import { LlamapegError } from "../errors.js";
import { PegArena } from "../peg/arena.js";
import type { PegArenaJson } from "../peg/index.js";
import type { NormalizedChatRequest } from "./request.js";
import type { SamplingGrammar } from "./target.js";

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
  toolCallsRequired?: boolean;
  /** The plan's parser (one arena). */
  parsers: PegArenaJson[];
}

export interface CompletionPlan {
  prompt: string;
  /** The message text in `prompt` (tokenized without special-token parsing). */
  promptSegments: PromptSegment[];
  chat: AppliedChatPlan;
  /** null: sample freely (no plan grammar, or the request's `grammar: false`). */
  grammar: SamplingGrammar | null;
  warnings: string[];
  /** The plan as JSON (computed on demand: serializing the parser costs). */
  record(): PlanRecord;
}

/** The plan for one request on `template`, with the target's BOS / EOS texts (and render budgets). */
export function buildCompletionPlan(template: string, r: NormalizedChatRequest, specials: { bos: string; eos: string }, templateLimits?: TemplateLimits): CompletionPlan {
  const chat = applyNormalized(template, {
    ...r.chat,
    bosToken: specials.bos,
    eosToken: specials.eos,
    now: new Date(),
    ...(templateLimits !== undefined ? { templateLimits } : {}),
  });
  const grammar: SamplingGrammar | null =
    r.grammar && chat.grammar !== ""
      ? { gbnf: chat.grammar, lazy: chat.grammarLazy, triggers: chat.grammarLazy ? chat.grammarTriggers : [], prefill: chat.grammarPrefill ?? "" }
      : null;
  return {
    prompt: chat.prompt,
    promptSegments: chat.promptSegments ?? [],
    chat,
    grammar,
    warnings: [...chat.warnings],
    record: () => ({
      format: chat.format,
      generationPrompt: chat.generationPrompt,
      thinkingStartTag: chat.thinkingStartTag,
      thinkingEndTags: chat.thinkingEndTags,
      additionalStops: chat.additionalStops,
      preservedTokens: chat.preservedTokens,
      grammar,
      ...(chat.toolCallsRequired === true ? { toolCallsRequired: true } : {}),
      parsers: [chat.parser.toJSON()],
    }),
  };
}

/** The session plan a record describes (no template, no model). */
export function planFromRecord(record: PlanRecord): ChatPlan {
  if (!Array.isArray(record.parsers) || record.parsers.length !== 1) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "record.plan.parsers must hold one parser (records with two come from an older llamapeg and cannot be replayed)", { where: "record.plan.parsers" });
  }
  return {
    prompt: "",
    format: record.format,
    grammar: record.grammar?.gbnf ?? "",
    grammarLazy: record.grammar?.lazy ?? false,
    grammarTriggers: record.grammar?.triggers ?? [],
    grammarPrefill: record.grammar?.prefill ?? "",
    preservedTokens: record.preservedTokens,
    additionalStops: record.additionalStops,
    generationPrompt: record.generationPrompt,
    thinkingStartTag: record.thinkingStartTag,
    thinkingEndTags: record.thinkingEndTags,
    ...(record.toolCallsRequired === true ? { toolCallsRequired: true } : {}),
    parser: PegArena.fromJSON(record.parsers[0]),
  };
}
