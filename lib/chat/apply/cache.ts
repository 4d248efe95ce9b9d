/**
 * Repeated plans: an agent loop sends the same template, tools, tool_choice and schema every turn
 * with new messages. Everything but the prompt comes from here then: the family (or the
 * template analysis), the generation prompt, the parser arena, its grammar, triggers and markers.
 *
 * - The key is the template and every request field that shapes the plan (not the messages):
 *   `PLAN_FIELDS` places each field of the checked request, so a new one fails to compile until
 *   it is placed.
 * - The generation prompt is what the template adds for the assistant's turn; it is taken from the
 *   cache (per template and `GENERATION_PROMPT_FIELDS`' projection of the request: render options,
 *   kind of last message, whether tools are shown, so a new tool set on a known template finds it
 *   too) when the prompt rendered now ends with it: the tree built for it then parses and
 *   prefills exactly the text the prompt ends with. Else it is rendered again.
 * - The plan's tree and grammar are kept per generation prompt (and per family prompt variant).
 * Entries are dropped least recently used first (32 request shapes x 8 generation prompts); all
 * caches of the library, these among them, are emptied by `clearPlanCache` (lib/cache.ts).
 */
import { createHash } from "node:crypto";

import { BoundedCache, boundedCache, clearCaches } from "../../cache.js";
import type { ChatFamily } from "../families/family.js";
import type { TemplateFacts } from "../template-facts.js";
import type { AppliedChatPlan } from "./types.js";
import type { NormalizedApplyRequest } from "./request.js";

/** A plan without what depends on the messages (prompt, its segments, history warnings). */
export interface PlanPart extends Omit<AppliedChatPlan, "prompt" | "promptSegments"> {
  /** Template text a family appends to the rendered prompt (Gemma 4 opens the model's turn). */
  promptSuffix: string;
}

export interface PlanEntry {
  family: ChatFamily | undefined;
  /** The template's hash (keys of the generation prompts). */
  templateHash: string;
  /** generation prompt + family variant -> the plan's shared part */
  parts: BoundedCache<string, PlanPart>;
}

const ENTRIES = 32;
const PARTS = 8;
const entries = boundedCache<string, PlanEntry>(ENTRIES);
/** template, render options and last-message kind -> generation prompt */
const generationPrompts = boundedCache<string, string>(ENTRIES * PARTS);

/**
 * Empties every cache of the library (lib/cache.ts): plans, generation prompts, template facts,
 * analyses, parsed templates, compiled schemas, converted tools.
 */
export function clearPlanCache(): void {
  clearCaches();
}

/**
 * Where each field of the checked request goes: "key", it shapes the plan (part of the cache key,
 * in this order); "prompt", it shapes only the prompt (the messages, the clock, the render budget).
 * A field added to `NormalizedApplyRequest` fails to compile until it is placed here.
 */
const PLAN_FIELDS = {
  messages: "prompt",
  tools: "key",
  toolChoice: "key",
  namedTool: "key",
  callsOnly: "key",
  parallelToolCalls: "key",
  jsonSchema: "key",
  // the degraded schema's warnings name it
  jsonSchemaWhere: "key",
  addGenerationPrompt: "key",
  grammar: "key",
  reasoningFormat: "key",
  enableThinking: "key",
  chatTemplateKwargs: "key",
  bosToken: "key",
  eosToken: "key",
  now: "prompt",
  analysisOverrides: "key",
  templateLimits: "prompt",
  referenceMode: "key",
  jsonWhitespace: "key",
  propertyOrder: "key",
} as const satisfies Record<keyof NormalizedApplyRequest, "key" | "prompt">;

type KeyField = { [K in keyof typeof PLAN_FIELDS]: (typeof PLAN_FIELDS)[K] extends "key" ? K : never }[keyof typeof PLAN_FIELDS];

const KEY_FIELDS = (Object.keys(PLAN_FIELDS) as (keyof typeof PLAN_FIELDS)[]).filter((k): k is KeyField => PLAN_FIELDS[k] === "key");

/** The request's projection on the fields that shape a plan. */
export type PlanShape = Pick<NormalizedApplyRequest, KeyField>;

export function planShape(req: NormalizedApplyRequest): PlanShape {
  return Object.fromEntries(KEY_FIELDS.map((k) => [k, req[k]])) as PlanShape;
}

function planKey(templateHash: string, req: NormalizedApplyRequest): string {
  const shape = planShape(req);
  const h = createHash("sha256").update(templateHash).update("\0");
  h.update(JSON.stringify(KEY_FIELDS.map((k) => shape[k] ?? null)));
  return h.digest("hex");
}

/** The cache entry of this request's shape (created empty, with its family, when new). */
export function planEntry(facts: TemplateFacts, req: NormalizedApplyRequest): PlanEntry {
  // analysis overrides always take the analysis path, even for a family's template
  return entries.getOrSet(planKey(facts.hash, req), () => ({
    family: req.analysisOverrides === undefined ? facts.family : undefined,
    templateHash: facts.hash,
    parts: new BoundedCache(PARTS),
  }));
}

/**
 * How each field of the checked request enters the generation prompt's key (besides the template):
 * "key", whole; a function, as its projection; "unread", not at all, since the two renders of
 * `generationPromptAfter` do not read it (or read both of its values); "suffix", not at all,
 * although the renders read it: keeping it would miss the cache on every request (the clock) or
 * on every new tool set, and a change it makes shows when the prompt rendered now does not end
 * with the cached generation prompt (see `generationPromptOf`). A field added to
 * `NormalizedApplyRequest` fails to compile until it is placed here.
 */
const GENERATION_PROMPT_FIELDS = {
  // the kind of the last message (the template may close or continue it)
  messages: (messages) => {
    const last = messages[messages.length - 1];
    return last === undefined ? "" : `${last.role}${(last.tool_calls?.length ?? 0) > 0 ? "+calls" : ""}`;
  },
  // whether tools are shown (a named tool is one of them: `namedTool` never shows none)
  tools: (tools) => (tools?.length ?? 0) > 0,
  toolChoice: "unread",
  namedTool: "suffix",
  callsOnly: "unread",
  parallelToolCalls: "unread",
  // whether there is one (a family's template may print it)
  jsonSchema: (schema) => schema !== null,
  jsonSchemaWhere: "unread",
  addGenerationPrompt: "unread",
  grammar: "unread",
  reasoningFormat: "unread",
  enableThinking: "key",
  chatTemplateKwargs: "key",
  bosToken: "key",
  eosToken: "key",
  now: "suffix",
  analysisOverrides: "unread",
  // budgets: a render within them writes the same text
  templateLimits: "unread",
  // how floats print
  referenceMode: "key",
  // the grammar's, not the template's
  jsonWhitespace: "unread",
  propertyOrder: "unread",
} satisfies { [K in keyof NormalizedApplyRequest]: "key" | "unread" | "suffix" | ((value: NormalizedApplyRequest[K]) => unknown) };

const GENERATION_PROMPT_KEYS = Object.keys(GENERATION_PROMPT_FIELDS) as (keyof NormalizedApplyRequest)[];

/** The request's projection on what its generation prompt may depend on (the key, with the template's hash). */
export function generationPromptShape(req: NormalizedApplyRequest): Partial<Record<keyof NormalizedApplyRequest, unknown>> {
  const out: Partial<Record<keyof NormalizedApplyRequest, unknown>> = {};
  for (const k of GENERATION_PROMPT_KEYS) {
    const rule: "key" | "unread" | "suffix" | ((value: never) => unknown) = GENERATION_PROMPT_FIELDS[k];
    if (rule === "key") out[k] = req[k] ?? null;
    else if (typeof rule === "function") out[k] = (rule as (value: unknown) => unknown)(req[k]);
  }
  return out;
}

function generationPromptKey(entry: PlanEntry, req: NormalizedApplyRequest): string {
  return JSON.stringify([entry.templateHash, generationPromptShape(req)]);
}

/** The generation prompt: cached when `prompt` ends with it, else rendered (`render`) and kept. */
export function generationPromptOf(entry: PlanEntry, req: NormalizedApplyRequest, prompt: string, render: () => string): string {
  const key = generationPromptKey(entry, req);
  const cached = generationPrompts.get(key);
  if (cached !== undefined && req.addGenerationPrompt && prompt.endsWith(cached)) return cached;
  const generationPrompt = render();
  generationPrompts.set(key, generationPrompt);
  return generationPrompt;
}

/** The shared part for `key` (a generation prompt and variant), built once. */
export function planPart(entry: PlanEntry, key: string, build: () => PlanPart): PlanPart {
  return entry.parts.getOrSet(key, build);
}
