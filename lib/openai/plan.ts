/**
 * From a checked request to what one generation needs: the chat plan (built whole by
 * `applyChatTemplate`), the sampler's grammar, and the plan as JSON for record / replay. Nothing
 * about the plan is decided here.
 */
import { applyNormalized, type AppliedChatPlan, type NormalizedApplyRequest } from "../chat/apply/index.js";
import type { ChatPlan, SamplingGrammar } from "../chat/plan.js";
import type { PromptTextSegment } from "../chat/prompt.js";
import type { TemplateLimits } from "../jinja/index.js";
import { LlamapegError } from "../errors.js";
import { PegArena } from "../peg/arena.js";
import type { PegArenaJson } from "../peg/index.js";
import type { ReasoningBudgetOptions } from "../llama/reasoning-budget.js";
import { planReasoningBudget } from "./reasoning.js";
import type { NormalizedChatRequest } from "./request.js";
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
  promptSegments: PromptTextSegment[];
  chat: AppliedChatPlan;
  /** null: sample freely (no plan grammar, or the request's `grammar: false`). */
  grammar: SamplingGrammar | null;
  /**
   * The request's reasoning budget on this plan's markers (unbounded when it asks for none, so the
   * block's tokens are counted); undefined when the plan has no reasoning markers.
   */
  reasoningBudget: ReasoningBudgetOptions | undefined;
  warnings: string[];
  /** The plan as JSON (computed on demand: serializing the parser costs). */
  record(): PlanRecord;
}

/** What `applyNormalized` takes for this request on a target with these BOS / EOS texts (and render budgets). */
export function applyRequestOf(r: NormalizedChatRequest, specials: { bos: string; eos: string }, templateLimits?: TemplateLimits): NormalizedApplyRequest {
  return {
    ...r.chat,
    bosToken: specials.bos,
    eosToken: specials.eos,
    now: new Date(),
    ...(templateLimits !== undefined ? { templateLimits } : {}),
  };
}

/** The plan for one request on `template`, with the target's BOS / EOS texts (and render budgets). */
export function buildCompletionPlan(template: string, r: NormalizedChatRequest, specials: { bos: string; eos: string }, templateLimits?: TemplateLimits): CompletionPlan {
  return completionPlanOf(applyNormalized(template, applyRequestOf(r, specials, templateLimits)), r);
}

/**
 * Builds the chat plan as `applyNormalized` does, possibly elsewhere (the server's runs in a worker
 * thread, lib/server/plan-worker.ts, so a cold plan never blocks its event loop).
 */
export type ChatPlanner = (template: string, req: NormalizedApplyRequest) => Promise<AppliedChatPlan>;

/** `buildCompletionPlan` with the chat plan from `planner`. */
export async function buildCompletionPlanWith(planner: ChatPlanner, template: string, r: NormalizedChatRequest, specials: { bos: string; eos: string }, templateLimits?: TemplateLimits): Promise<CompletionPlan> {
  return completionPlanOf(await planner(template, applyRequestOf(r, specials, templateLimits)), r);
}

/** The completion plan of a chat plan built for `r`. */
function completionPlanOf(chat: AppliedChatPlan, r: NormalizedChatRequest): CompletionPlan {
  const grammar: SamplingGrammar | null = r.grammar ? chat.grammar : null;
  const budget = planReasoningBudget(chat, r.reasoningBudget);
  return {
    prompt: chat.prompt,
    promptSegments: chat.promptSegments ?? [],
    chat,
    grammar,
    reasoningBudget: budget.options,
    warnings: budget.warning === undefined ? [...chat.warnings] : [...chat.warnings, budget.warning],
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
    grammar: record.grammar,
    preservedTokens: record.preservedTokens,
    additionalStops: record.additionalStops,
    generationPrompt: record.generationPrompt,
    thinkingStartTag: record.thinkingStartTag,
    thinkingEndTags: record.thinkingEndTags,
    ...(record.toolCallsRequired === true ? { toolCallsRequired: true } : {}),
    parser: PegArena.fromJSON(record.parsers[0]),
  };
}
