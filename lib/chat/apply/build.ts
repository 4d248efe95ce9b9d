/**
 * A checked request and a template in, the whole plan out: the prompt, one output tree (the
 * parser), the grammar exported from that tree, and everything sampling and parsing need. Every
 * decision that shapes them is made here, once:
 * - the family (families/registry.ts) or, for any other template, the template analysis;
 * - a named tool_choice: only that tool, and a call is required;
 * - tool_choice "required" with calls only: the grammar is the tree's calls-only variant
 *   (reasoning, then calls); the parser still reads text before calls;
 * - tools together with a response schema: ONE choice over both trees (the schema's answer, or the
 *   calls), its grammar eager;
 * - per-tool schema degradation (schemas.ts): a schema the grammar cannot enforce loses the
 *   keywords it cannot, a schema that cannot be compiled becomes "any JSON object", with warnings;
 * - the generation prompt: parsed in front of the output, and what an eager grammar's sampler
 *   prefills (`grammar.prefill`), as llama.cpp's `common_sampler_init` does.
 */
import { internalError } from "../../errors.js";
import { analyzeTemplate } from "../analysis/analyze.js";
import type { FamilyPlan, PlanInput } from "../families/family.js";
import { ChatPegBuilder } from "../grammar/builder.js";
import type { SamplingGrammar } from "../plan.js";
import { segmentsFromMarks } from "../prompt.js";
import { templateFacts } from "../template-facts.js";
import { toolFunctions, toolParameters, type ChatTool } from "../tools.js";
import { analysisPlan } from "./autoparser.js";
import { treeGbnf } from "./grammar.js";
import { generationPromptAfter, renderInput } from "./render.js";
import type { NormalizedApplyRequest } from "./request.js";
import { enforceableResponseSchema, sanitizeToolSchemas } from "./schemas.js";
import { generationPromptOf, planEntry, planPart, type PlanPart } from "./cache.js";
import { shownTools, templateInput } from "./template-input.js";
import type { AppliedChatPlan } from "./types.js";

/** Rule prefix of the response-schema tree beside the tools tree in one arena. */
const SCHEMA_SIDE = "schema-answer-";

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
 * The plan: the template input built once, the prompt rendered once, the generation prompt from
 * the cache or from one more render, the shared part from the cache or built.
 */
export function buildPlan(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const facts = templateFacts(source);
  const tools = shownTools(req);
  const input = templateInput(facts, req, tools);
  // Render first: a template that does not render fails with its render error, not a probe's.
  const chat = renderInput(facts, input, req);
  const entry = planEntry(facts, req);
  const generationPrompt = generationPromptOf(entry, req, chat.prompt, () => generationPromptAfter(facts, input, req, chat));
  const rendered = { prompt: chat.prompt, generationPrompt };
  const variant = entry.family?.promptVariant?.(rendered.prompt, req) ?? "";
  const part = planPart(entry, `${generationPrompt}\0${variant}`, () => buildPart(source, req, tools, rendered, entry.family));
  const { promptSuffix, warnings: partWarnings, ...shared } = part;
  return {
    ...shared,
    prompt: rendered.prompt + promptSuffix,
    promptSegments: segmentsFromMarks(chat.inputMarks),
    // fresh arrays: a caller may change its plan, never the cached one
    grammar: part.grammar === null ? null : { ...part.grammar, triggers: part.grammar.triggers.map((t) => ({ ...t })) },
    preservedTokens: [...part.preservedTokens],
    additionalStops: [...part.additionalStops],
    thinkingEndTags: [...part.thinkingEndTags],
    warnings: [...input.warnings, ...partWarnings],
  };
}

/** Everything of a plan but the prompt: planner, degradation, one tree, its grammar. */
function buildPart(source: string, req: NormalizedApplyRequest, tools: ChatTool[] | null, rendered: { prompt: string; generationPrompt: string }, family: FamilyPlanner | undefined): PlanPart {
  const warnings: string[] = [];
  const planner = family ?? analysisPlanner(source, req);
  const useTools = tools !== null && tools.length > 0 && req.toolChoice !== "none";
  // beyond the reference: the default schema compiler (docs/json-schema.md); reference_mode keeps llama.cpp's
  const schemaMode = req.referenceMode ? "reference" : "default";
  const grammarTools = useTools ? sanitizeToolSchemas(tools, warnings, schemaMode) : tools;
  const schema = req.jsonSchema === null ? null : enforceableResponseSchema(req.jsonSchema, req.jsonSchemaWhere, warnings, schemaMode);
  const input = (over: Partial<NormalizedApplyRequest>): PlanInput => ({ source, req: { ...req, tools: grammarTools, jsonSchema: schema, ...over }, ...rendered });

  let schemaSide: FamilyPlan | null = null;
  let plan: FamilyPlan;
  if (useTools && schema !== null) {
    schemaSide = planner.plan(input({ tools: [], toolChoice: "none" }));
    if (schemaSide.grammar === "none" || schemaSide.supportsResponseFormat === false) {
      warnings.push("response_format: this template's family cannot constrain an answer to a schema beside tool calls; only the calls are enforced");
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
  const gbnf = grammarFrom === null ? req.grammar : treeGbnf(parser, { from: grammarFrom, schemas, schemaMode, jsonWhitespace: req.jsonWhitespace, propertyOrder: req.propertyOrder });
  const lazy = grammarFrom === "lazy";
  const grammar: SamplingGrammar | null = gbnf === "" ? null : {
    gbnf,
    lazy,
    triggers: schemaSide !== null ? [] : plan.triggers, // as the reference lists them, eager too (the targets read them only when lazy)
    prefill: typeof grammarFrom === "number" ? generationPrompt : "",
  };
  const required = req.toolChoice === "required" && useTools && schema === null && grammar !== null;
  // a family may append template text (Gemma 4 opens the model's turn): the segments stay the render's
  const prompt = plan.prompt ?? rendered.prompt;
  if (!prompt.startsWith(rendered.prompt)) throw internalError("a family's prompt does not extend the rendered one: its message segments are unknown", "applyChatTemplate");
  return {
    promptSuffix: prompt.slice(rendered.prompt.length),
    format: plan.format,
    grammar,
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
