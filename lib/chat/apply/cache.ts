/**
 * Repeated plans: an agent loop sends the same template, tools, tool_choice and schema every turn
 * with new messages. Everything but the prompt comes from here then: the family (or the
 * template analysis), the generation prompt, the parser arena, its grammar, triggers and markers.
 *
 * - The key is the template and every request field that shapes the plan (not the messages).
 * - The generation prompt is what the template adds for the assistant's turn; it is taken from the
 *   cache (per template, render options and kind of last message, so a new tool set on a known
 *   template finds it too) when the prompt rendered now ends with it: the tree built for it then
 *   parses and prefills exactly the text the prompt ends with. Else it is rendered again.
 * - The plan's tree and grammar are kept per generation prompt (and per family prompt variant).
 * Entries are dropped oldest first (32 requests shapes x 8 generation prompts).
 */
import { createHash } from "node:crypto";

import type { ChatFamily } from "../formats/family.js";
import { clearReusedValues } from "../template/reuse.js";
import type { AppliedChatPlan } from "./types.js";
import type { NormalizedApplyRequest } from "./request.js";

/** A plan without what depends on the messages (prompt, its segments, history warnings). */
export interface PlanPart extends Omit<AppliedChatPlan, "prompt" | "promptSegments"> {
  /** Template text a family appends to the rendered prompt (Gemma 4 opens the model's turn). */
  promptSuffix: string;
}

export interface PlanEntry {
  family: ChatFamily | undefined;
  /** The template reads tool-call arguments as objects (its probed capability). */
  objectArguments: boolean;
  /** The template's hash (keys of the generation prompts). */
  templateHash: string;
  /** generation prompt + family variant -> the plan's shared part */
  parts: Map<string, PlanPart>;
}

const ENTRIES = 32;
const PARTS = 8;
const entries = new Map<string, PlanEntry>();
/** template, render options and last-message kind -> generation prompt */
const generationPrompts = new Map<string, string>();

export function clearPlanCache(): void {
  entries.clear();
  generationPrompts.clear();
  // the converted tools the renderer keeps between renders (template/reuse.ts) go with the plans
  clearReusedValues();
}

function planKey(templateHash: string, req: NormalizedApplyRequest): string {
  const h = createHash("sha256").update(templateHash).update("\0");
  // everything that shapes the plan; the messages (and the clock) only shape the prompt
  h.update(
    JSON.stringify([
      req.tools,
      req.toolChoice,
      req.namedTool,
      req.callsOnly,
      req.parallelToolCalls,
      req.jsonSchema,
      req.grammar,
      req.reasoningFormat,
      req.enableThinking,
      req.chatTemplateKwargs ?? null,
      req.bosToken,
      req.eosToken,
      req.analysisOverrides ?? null,
      req.addGenerationPrompt,
      req.referenceMode,
    ]),
  );
  return h.digest("hex");
}

/** The cache entry of this request's shape (created empty, with its family, when new). */
export function planEntry(source: string, req: NormalizedApplyRequest, family: () => ChatFamily | undefined, objectArguments: () => boolean): PlanEntry {
  const templateHash = createHash("sha256").update(source).digest("hex");
  const key = planKey(templateHash, req);
  let entry = entries.get(key);
  if (entry !== undefined) {
    entries.delete(key); // most recently used last
  } else {
    entry = { family: family(), objectArguments: objectArguments(), templateHash, parts: new Map() };
    if (entries.size >= ENTRIES) entries.delete(entries.keys().next().value!);
  }
  entries.set(key, entry);
  return entry;
}

/** What the generation prompt may depend on: the template, its render options, whether tools are shown, the last message. */
function generationPromptKey(entry: PlanEntry, req: NormalizedApplyRequest): string {
  const last = req.messages[req.messages.length - 1];
  const lastKind = last === undefined ? "" : `${last.role}${(last.tool_calls?.length ?? 0) > 0 ? "+calls" : ""}`;
  return JSON.stringify([entry.templateHash, req.chatTemplateKwargs ?? null, req.enableThinking, req.bosToken, req.eosToken, (req.tools?.length ?? 0) > 0, req.jsonSchema !== null, lastKind]);
}

/** The generation prompt: cached when `prompt` ends with it, else rendered (`render`) and kept. */
export function generationPromptOf(entry: PlanEntry, req: NormalizedApplyRequest, prompt: string, render: () => string): string {
  const key = generationPromptKey(entry, req);
  const cached = generationPrompts.get(key);
  if (cached !== undefined && req.addGenerationPrompt && prompt.endsWith(cached)) return cached;
  const generationPrompt = render();
  if (generationPrompts.size >= ENTRIES * PARTS) generationPrompts.delete(generationPrompts.keys().next().value!);
  generationPrompts.set(key, generationPrompt);
  return generationPrompt;
}

/** The shared part for `key` (a generation prompt and variant), built once. */
export function planPart(entry: PlanEntry, key: string, build: () => PlanPart): PlanPart {
  let part = entry.parts.get(key);
  if (part === undefined) {
    part = build();
    if (entry.parts.size >= PARTS) entry.parts.delete(entry.parts.keys().next().value!);
    entry.parts.set(key, part);
  }
  return part;
}
