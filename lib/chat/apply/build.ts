/**
 * A checked request and a template in, the whole plan out: the prompt, one output tree (the
 * parser), the grammar exported from that tree, and everything sampling and parsing need. Every
 * decision that shapes them is made here, once:
 * - the family (formats/registry.ts) or, for any other template, the template analysis;
 * - a named tool_choice: only that tool, and a call is required;
 * - tool_choice "required" with calls only: the grammar is the tree's calls-only variant
 *   (reasoning, then calls); the parser still reads text before calls;
 * - tools together with a response schema: ONE choice over both trees (the schema's answer, or the
 *   calls), its grammar eager;
 * - per-tool schema degradation (schemas.ts): a schema the grammar cannot enforce loses the
 *   keywords it cannot, a schema that cannot be compiled becomes "any JSON object", with warnings;
 * - the generation prompt: parsed in front of the output, and what an eager grammar's sampler
 *   prefills (`grammarPrefill`), as llama.cpp's `common_sampler_init` does.
 */
import { LlamapegError } from "../../errors.js";
import { analyzeTemplate } from "../analysis/analyze.js";
import type { FamilyPlan, PlanInput } from "../formats/family.js";
import { detectFamily } from "../formats/registry.js";
import { ChatPegBuilder } from "../grammar/builder.js";
import type { ChatRenderRequest } from "../template/chat-context.js";
import { segmentsFromMarks } from "../prompt.js";
import { renderChatPrompt, renderGenerationPrompt } from "../template/chat-render.js";
import { closeCutJson } from "../partial-json.js";
import { templateCaps } from "../template/caps.js";
import { patchTemplateSource } from "../template/source-patches.js";
import { toolFunctions, toolParameters, type ChatTool } from "../tools.js";
import { analysisPlan } from "./autoparser.js";
import { treeGbnf } from "./grammar.js";
import type { NormalizedApplyRequest } from "./request.js";
import { enforceableResponseSchema, sanitizeToolSchemas } from "./schemas.js";
import { generationPromptOf, planEntry, planPart, type PlanPart } from "./cache.js";
import type { AppliedChatPlan } from "./types.js";

/** Rule prefix of the response-schema tree beside the tools tree in one arena. */
const SCHEMA_SIDE = "schema-answer-";

/** The render request the template layer takes. */
export function renderRequest(req: NormalizedApplyRequest, tools: readonly ChatTool[] | null): ChatRenderRequest {
  return {
    messages: req.messages,
    ...(tools !== null ? { tools } : {}),
    add_generation_prompt: req.addGenerationPrompt,
    enable_thinking: req.enableThinking,
    ...(req.chatTemplateKwargs !== undefined ? { chat_template_kwargs: req.chatTemplateKwargs } : {}),
    bos_token: req.bosToken,
    eos_token: req.eosToken,
    now: req.now,
    ...(req.jsonSchema !== null ? { json_schema: req.jsonSchema } : {}),
    ...(req.referenceMode ? { reference_mode: true } : {}),
  };
}

/** The tools as the prompt shows them: all of them, or the named one alone. */
function shownTools(req: NormalizedApplyRequest): ChatTool[] | null {
  if (req.tools === null || req.namedTool === null) return req.tools;
  return req.tools.filter((t) => t.function.name === req.namedTool);
}

interface FamilyPlanner {
  plan(input: PlanInput): FamilyPlan;
}

/** The analysis path's planner (analysis overrides always take it, even for a family's template). */
function analysisPlanner(source: string, req: NormalizedApplyRequest): FamilyPlanner {
  const analysis = analyzeTemplate(source, {
    bosToken: req.bosToken,
    eosToken: req.eosToken,
    ...(req.analysisOverrides !== undefined ? { overrides: req.analysisOverrides } : {}),
  });
  return { plan: (input) => analysisPlan(analysis, input) };
}

/**
 * Earlier answers of the model in the conversation whose arguments are no JSON (a call cut by
 * max_tokens, text a parse failure kept): a template that reads arguments as objects gets them
 * closed where they were cut, or {} for text that is no JSON; the reference refuses such a
 * conversation. Templates that take the text render it as it is.
 */
function historyWarnings(objectArguments: boolean, req: NormalizedApplyRequest, warnings: string[]): void {
  if (!objectArguments) return;
  req.messages.forEach((m, i) =>
    (m.tool_calls ?? []).forEach((c, j) => {
      const where = `messages[${i}].tool_calls[${j}].function.arguments`;
      const json = closeCutJson(c.function.arguments);
      if (json === undefined) warnings.push(`${where}: not JSON, and this template reads arguments as an object: it gets {}`);
      else if (json.closed) warnings.push(`${where}: a cut JSON object; the template gets it closed as ${json.text}`);
    }),
  );
}

export function buildPlan(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const warnings: string[] = [];
  const tools = shownTools(req);
  // Render first: a template that does not render fails with its render error, not a probe's.
  const render = renderRequest(req, tools);
  const chat = renderChatPrompt(source, render, req.templateLimits);
  const entry = planEntry(
    source,
    req,
    () => (req.analysisOverrides === undefined ? detectFamily(patchTemplateSource(source)) : undefined),
    () => templateCaps(patchTemplateSource(source)).supportsObjectArguments,
  );
  historyWarnings(entry.objectArguments, req, warnings);
  const generationPrompt = generationPromptOf(entry, req, chat.prompt, () => renderGenerationPrompt(source, render, req.templateLimits));
  const rendered = { prompt: chat.prompt, generationPrompt };
  const variant = entry.family?.promptVariant?.(rendered.prompt, req) ?? "";
  const part = planPart(entry, `${generationPrompt}\0${variant}`, () => buildPart(source, req, tools, rendered, entry.family));
  const { promptSuffix, warnings: partWarnings, ...shared } = part;
  return {
    ...shared,
    prompt: rendered.prompt + promptSuffix,
    promptSegments: segmentsFromMarks(chat.inputMarks),
    // fresh arrays: a caller may change its plan, never the cached one
    grammarTriggers: part.grammarTriggers.map((t) => ({ ...t })),
    preservedTokens: [...part.preservedTokens],
    additionalStops: [...part.additionalStops],
    thinkingEndTags: [...part.thinkingEndTags],
    warnings: [...warnings, ...partWarnings],
  };
}

/** Everything of a plan but the prompt: planner, degradation, one tree, its grammar. */
function buildPart(source: string, req: NormalizedApplyRequest, tools: ChatTool[] | null, rendered: { prompt: string; generationPrompt: string }, family: FamilyPlanner | undefined): PlanPart {
  const warnings: string[] = [];
  const planner = family ?? analysisPlanner(source, req);
  const useTools = tools !== null && tools.length > 0 && req.toolChoice !== "none";
  const grammarTools = useTools ? sanitizeToolSchemas(tools, warnings) : tools;
  const schema = req.jsonSchema === null ? null : enforceableResponseSchema(req.jsonSchema, req.jsonSchemaWhere, warnings);
  const input = (over: Partial<NormalizedApplyRequest>): PlanInput => ({ source, req: { ...req, tools: grammarTools, jsonSchema: schema, ...over }, ...rendered });

  let schemaSide: FamilyPlan | null = null;
  let plan: FamilyPlan;
  if (useTools && schema !== null) {
    schemaSide = planner.plan(input({ tools: [], toolChoice: "none" }));
    if (schemaSide.grammar === "none" || schemaSide.supportsResponseFormat === false) {
      warnings.push("response_format: this template's format cannot constrain an answer to a schema beside tool calls; only the calls are enforced");
      schemaSide = null;
      plan = planner.plan(input({ jsonSchema: null }));
    } else {
      plan = planner.plan(input({ toolChoice: "required", jsonSchema: null }));
    }
  } else {
    plan = planner.plan(input({}));
  }

  const p = new ChatPegBuilder();
  let root;
  let grammarFrom: number | "lazy" | null = null;
  if (schemaSide !== null) {
    const answer = p.withRulePrefix(SCHEMA_SIDE, () => schemaSide.build(p));
    const calls = plan.build(p);
    root = p.choice([answer.root, calls.root]);
    grammarFrom = p.choice([answer.root, calls.callsOnly ?? calls.root]).id;
  } else {
    const tree = plan.build(p);
    root = tree.root;
    if (plan.grammar === "lazy") grammarFrom = "lazy";
    else if (plan.grammar === "eager") grammarFrom = (req.toolChoice === "required" && req.callsOnly && tree.callsOnly !== undefined ? tree.callsOnly : tree.root).id;
  }
  p.setRoot(root);
  const parser = p.build();

  const schemas: unknown[] = toolFunctions(grammarTools ?? []).map(toolParameters);
  if (schema !== null && (schemaSide !== null || (plan.supportsResponseFormat ?? true))) schemas.push(schema);
  const generationPrompt = plan.generationPrompt ?? rendered.generationPrompt;
  const grammar = grammarFrom === null ? req.grammar : treeGbnf(parser, { from: grammarFrom, schemas });
  const required = req.toolChoice === "required" && useTools && schema === null && grammar !== "";
  // a family may append template text (Gemma 4 opens the model's turn): the segments stay the render's
  const prompt = plan.prompt ?? rendered.prompt;
  if (!prompt.startsWith(rendered.prompt)) throw new LlamapegError("ERR_INTERNAL", "a family's prompt does not extend the rendered one: its message segments are unknown", { where: "applyChatTemplate" });
  return {
    promptSuffix: prompt.slice(rendered.prompt.length),
    format: plan.format,
    grammar,
    grammarLazy: grammarFrom === "lazy",
    grammarTriggers: schemaSide !== null ? [] : plan.triggers,
    grammarPrefill: typeof grammarFrom === "number" ? generationPrompt : "",
    grammarRoot: typeof grammarFrom === "number" ? grammarFrom : -1,
    preservedTokens: plan.preservedTokens,
    additionalStops: plan.additionalStops,
    generationPrompt,
    thinkingStartTag: plan.thinkingStartTag,
    thinkingEndTags: plan.thinkingEndTags,
    ...(required ? { toolCallsRequired: true } : {}),
    ...(req.referenceMode ? { referenceMode: true } : {}),
    warnings,
    parser,
  };
}

export function internalError(e: unknown): never {
  if (e instanceof LlamapegError) throw e;
  throw new LlamapegError("ERR_INTERNAL", `applyChatTemplate failed unexpectedly: ${(e as Error)?.message ?? String(e)}`, { where: "applyChatTemplate" });
}
