/**
 * A chat request's reasoning controls: the templates' thinking switch and the reasoning budget,
 * from OpenAI's `reasoning_effort` and llama.cpp's per-request `reasoning_budget_tokens` /
 * `thinking_budget_tokens` / `reasoning_budget_message` (the Responses and Messages mappings write
 * these same fields); then the budget as `generate()`'s `reasoningBudget`, with the plan's markers.
 * llama.cpp's counterpart: the "Reasoning budget" block of `oaicompat_chat_params_parse`
 * (tools/server/server-common.cpp). Where we differ, and why: docs/openai.md, "Reasoning budget".
 */
import type { ChatPlan } from "../chat/plan.js";
import { promptOpensReasoning, type ReasoningBudgetOptions } from "../llama/reasoning-budget.js";
import { invalidRequest } from "./errors.js";

export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

/**
 * The budget an effort means when the request sets none itself (null: no bound). Efforts below
 * OpenAI's default bound the block; `medium` (the default) and above leave the model its own
 * length, since a local model has no "think harder" setting beyond an unbounded block. `none` is
 * budget 0: thinking rendered off where the template can, a block the model opens anyway closed at
 * once. low = 1024 is Anthropic's smallest `budget_tokens` and Gemini's `low`.
 */
export const EFFORT_BUDGETS: Readonly<Record<ReasoningEffort, number | null>> = {
  none: 0,
  minimal: 256,
  low: 1024,
  medium: null,
  high: null,
  xhigh: null,
  max: null,
};

const EFFORTS = Object.keys(EFFORT_BUDGETS) as ReasoningEffort[];

/** The budget a request asks for, before the plan's markers are known. */
export interface RequestReasoningBudget {
  /** Most tokens inside a reasoning block; 0: none. */
  tokens: number;
  /** Forced before the end marker when the budget is spent ("" for none). */
  message: string;
}

export interface RequestReasoning {
  /** The thinking switch the request implies (undefined: the template's default). */
  thinking: boolean | undefined;
  /** null: no bound. */
  budget: RequestReasoningBudget | null;
  /** `reasoning_effort` as given (the templates that read it get it, as llama-server passes it). */
  effort: ReasoningEffort | undefined;
}

function effortOf(value: unknown): ReasoningEffort | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string" && (EFFORTS as string[]).includes(value)) return value as ReasoningEffort;
  return invalidRequest("reasoning_effort", `expected ${EFFORTS.map((e) => JSON.stringify(e)).join(", ")}, got ${JSON.stringify(value)}`);
}

/** llama.cpp's budget fields: an integer, -1 (no budget) up to 2^31 - 1. */
function budgetField(r: Record<string, unknown>, key: string): number | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < -1 || v > 0x7ffffffe) invalidRequest(key, `expected an integer in [-1, 2147483646] (-1: no budget), got ${JSON.stringify(v)}`);
  return v;
}

/**
 * The reasoning controls of a raw Chat Completions request. An explicit budget
 * (`reasoning_budget_tokens`, or its alias `thinking_budget_tokens`; -1 is none) wins over the one
 * `reasoning_effort` implies (EFFORT_BUDGETS). Budget 0 and effort `none` turn thinking off;
 * any other effort turns it on.
 */
export function requestReasoning(r: Record<string, unknown>): RequestReasoning {
  const effort = effortOf(r.reasoning_effort);
  const a = budgetField(r, "reasoning_budget_tokens");
  const b = budgetField(r, "thinking_budget_tokens");
  // llama.cpp reads the first and drops the second silently; two different numbers are a mistake.
  if (a !== undefined && b !== undefined && a !== b) invalidRequest("thinking_budget_tokens", `is ${b} but reasoning_budget_tokens is ${a}: send one of the two (they are the same field)`);
  const message = r.reasoning_budget_message;
  if (message !== undefined && message !== null && typeof message !== "string") invalidRequest("reasoning_budget_message", `expected a string, got ${JSON.stringify(message)}`);
  const explicit = a ?? b;
  const tokens = explicit !== undefined ? (explicit < 0 ? null : explicit) : effort !== undefined ? EFFORT_BUDGETS[effort] : null;
  const thinking = tokens === 0 || effort === "none" ? false : effort !== undefined ? true : undefined;
  return { thinking, budget: tokens === null ? null : { tokens, message: (message as string | null | undefined) ?? "" }, effort };
}

/** What the plan makes of a request's budget: generate()'s option, and a warning when it cannot apply. */
export interface PlannedReasoningBudget {
  /**
   * The markers, the bound (Infinity when the request sets none: the block's tokens are still
   * counted for the usage) and whether the prompt opened the block; undefined when the plan has
   * no reasoning markers.
   */
  options: ReasoningBudgetOptions | undefined;
  warning: string | undefined;
}

/**
 * The budget on this plan: its thinking start tag and end tags (the first end tag is the one
 * forced), and whether its generation prompt leaves the model inside a block. A plan without
 * end tags has no reasoning to bound: the budget is a no-op, said in a warning.
 */
export function planReasoningBudget(plan: Pick<ChatPlan, "thinkingStartTag" | "thinkingEndTags" | "generationPrompt">, budget: RequestReasoningBudget | null): PlannedReasoningBudget {
  const end = plan.thinkingEndTags.filter((t) => t !== "");
  if (end.length === 0) {
    const warning = budget === null ? undefined : "reasoning budget: this chat template has no reasoning markers, so the budget has no effect";
    return { options: undefined, warning };
  }
  const start = plan.thinkingStartTag;
  return {
    options: { tokens: budget?.tokens ?? Infinity, start, end, message: budget?.message ?? "", open: promptOpensReasoning(plan.generationPrompt, start, end) },
    warning: undefined,
  };
}
