/**
 * Pieces the family modules share: the request questions every family asks, the per-tool choice,
 * the tagged-argument loop, triggers, and the plan defaults.
 */
import { SchemaInfo } from "../../json-schema/schema-info.js";
import type { PegParser } from "../../peg/builder.js";
import type { NormalizedApplyRequest } from "../apply/request.js";
import type { ChatPegBuilder } from "../grammar/builder.js";
import type { GrammarTrigger } from "../plan.js";
import { toolFunctions, toolParameters, toolProperties, toolRequired, type ChatToolFunction } from "../tools.js";
import type { FamilyPlan } from "./family.js";

export const word = (value: string): GrammarTrigger => ({ type: "word", value });
export const pattern = (value: string): GrammarTrigger => ({ type: "pattern", value });

/** What most families decide first. */
export interface RequestShape {
  fns: ChatToolFunction[];
  hasTools: boolean;
  /** Tools offered and tool_choice is not "none". */
  useTools: boolean;
  hasResponseFormat: boolean;
  required: boolean;
  extractReasoning: boolean;
}

export function shapeOf(req: NormalizedApplyRequest): RequestShape {
  const fns = toolFunctions(req.tools ?? []);
  return {
    fns,
    hasTools: fns.length > 0,
    useTools: fns.length > 0 && req.toolChoice !== "none",
    hasResponseFormat: req.jsonSchema !== null,
    required: req.toolChoice === "required",
    extractReasoning: req.reasoningFormat !== "none",
  };
}

/** "none" without a grammar, else lazy or eager. */
export function grammarMode(include: boolean, lazy: boolean): FamilyPlan["grammar"] {
  return include ? (lazy ? "lazy" : "eager") : "none";
}

/** One rule per tool, `tool-<name>`, as an ordered choice (the reference's per-tool loop). */
export function toolChoice(p: ChatPegBuilder, fns: readonly ChatToolFunction[], call: (fn: ChatToolFunction) => PegParser, rule = (fn: ChatToolFunction) => `tool-${fn.name}`): PegParser {
  return p.choice(fns.map((fn) => p.rule(rule(fn), call(fn))));
}

/** One tagged argument of a function: its name, its schema, and whether the schema is a string. */
export interface ArgumentSpec {
  name: string;
  schema: Record<string, unknown>;
  isString: boolean;
  required: boolean;
}

/** The function's arguments in definition order, with string-ness resolved through its `$ref`s. */
export function argumentSpecs(fn: ChatToolFunction): ArgumentSpec[] {
  const info = new SchemaInfo();
  info.resolveRefs(toolParameters(fn));
  const required = toolRequired(fn);
  return toolProperties(fn).map(([name, schema]) => ({ name, schema, isString: info.resolvesToString(schema), required: required.has(name) }));
}

export { callsAfterReasoning, requiredThenOptional } from "../grammar/syntax-parsers.js";

/** Plan defaults: the native format, no stops. */
export function familyPlan(fields: Omit<FamilyPlan, "format" | "additionalStops"> & Partial<Pick<FamilyPlan, "format" | "additionalStops">>): FamilyPlan {
  return { format: "peg-native", additionalStops: [], ...fields };
}
