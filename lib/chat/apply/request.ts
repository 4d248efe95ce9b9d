/**
 * The `applyChatTemplate` request: OpenAI field names plus llama.cpp's reasoning options, checked
 * and brought into one internal shape. `response_format` is read as the server reads it
 * (`json_object` with an optional `schema`, `json_schema` with `json_schema.schema`).
 */
import { LlamapegError } from "../../errors.js";
import type { TemplateAnalysisOverrides } from "../analysis/types.js";
import type { ToolChoiceMode } from "../grammar/formats.js";
import type { ChatTool } from "../tools.js";
import { type TemplateLimits, resolveLimits } from "../template/limits.js";

export type ReasoningFormat = "none" | "auto" | "deepseek";

export interface ApplyChatRequest {
  messages: readonly unknown[];
  tools?: readonly unknown[] | null;
  tool_choice?: ToolChoiceMode;
  /** Default false, as llama.cpp's `common_chat_templates_inputs`. */
  parallel_tool_calls?: boolean;
  response_format?: { type: "text" | "json_object" | "json_schema"; schema?: unknown; json_schema?: { schema?: unknown } } | null;
  /** A JSON schema the answer must satisfy (llama.cpp's own field; takes precedence over `response_format`). */
  json_schema?: unknown;
  /** Default true. */
  add_generation_prompt?: boolean;
  /** A user GBNF grammar; an error together with tools (unless tool_choice is "none"). */
  grammar?: string | null;
  /** Default "auto": reasoning goes to `reasoning_content`. "none" leaves it in the content. */
  reasoning_format?: ReasoningFormat;
  /** Default: `chat_template_kwargs.enable_thinking` when that is a boolean (as llama.cpp's server), else true. */
  enable_thinking?: boolean;
  chat_template_kwargs?: Record<string, unknown>;
  bos_token?: string;
  eos_token?: string;
  /** What the template's date functions show. Default: the current time. */
  now?: Date;
  /** Replaces fields of the template analysis before the parser is generated (see `withOverrides`). */
  analysis_overrides?: TemplateAnalysisOverrides;
  /** Render budgets for the prompt (see docs/security.md). Default: DEFAULT_TEMPLATE_LIMITS. */
  template_limits?: TemplateLimits;
}

/** The request after validation. */
export interface NormalizedApplyRequest {
  messages: readonly unknown[];
  /** `null` when the request has no `tools` array (the reference tells "absent" from "empty"). */
  tools: ChatTool[] | null;
  toolChoice: ToolChoiceMode;
  parallelToolCalls: boolean;
  /** A non-empty JSON-schema object, or null. */
  jsonSchema: Record<string, unknown> | null;
  addGenerationPrompt: boolean;
  grammar: string;
  reasoningFormat: ReasoningFormat;
  enableThinking: boolean;
  chatTemplateKwargs: Record<string, unknown> | undefined;
  bosToken: string;
  eosToken: string;
  now: Date;
  analysisOverrides: TemplateAnalysisOverrides | undefined;
  templateLimits: TemplateLimits | undefined;
}

function invalid(message: string, where: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", message, { where });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function schemaOf(req: ApplyChatRequest): Record<string, unknown> | null {
  let schema: unknown = req.json_schema;
  const rf = req.response_format;
  if (schema === undefined && rf !== undefined && rf !== null) {
    if (!isObject(rf)) invalid("response_format must be an object", "response_format");
    if (rf.type === "json_object") schema = rf.schema ?? {};
    else if (rf.type === "json_schema") {
      const wrapper = rf.json_schema;
      if (wrapper !== undefined && !isObject(wrapper)) invalid("response_format.json_schema must be an object", "response_format.json_schema");
      schema = wrapper?.schema ?? {};
    } else if (rf.type !== "text" && rf.type !== undefined) {
      invalid(`response_format.type must be "text", "json_object" or "json_schema", got ${JSON.stringify(rf.type)}`, "response_format.type");
    }
  }
  if (schema === undefined || schema === null) return null;
  if (typeof schema === "string") {
    try {
      schema = JSON.parse(schema);
    } catch {
      invalid("json_schema is not valid JSON text", "json_schema");
    }
  }
  if (typeof schema === "boolean") return null;
  if (!isObject(schema)) invalid("a JSON schema must be an object", req.json_schema !== undefined ? "json_schema" : "response_format");
  // An empty schema (`json_object` without one) constrains nothing in the reference either.
  return Object.keys(schema).length > 0 ? schema : null;
}

function toolsOf(tools: unknown): ChatTool[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) invalid("tools must be an array", "tools");
  tools.forEach((t, i) => {
    if (!isObject(t)) invalid("a tool must be an object", `tools[${i}]`);
    if (t.type !== undefined && t.type !== "function") invalid(`unsupported tool type ${JSON.stringify(t.type)}`, `tools[${i}].type`);
    const fn = t.function;
    if (!isObject(fn)) invalid("a tool needs a function object", `tools[${i}].function`);
    if (typeof fn.name !== "string" || fn.name === "") invalid("a tool function needs a name", `tools[${i}].function.name`);
    if (fn.parameters !== undefined && !isObject(fn.parameters)) invalid("parameters must be a JSON schema object", `tools[${i}].function.parameters`);
  });
  return tools as ChatTool[];
}

/** `chat_template_kwargs.enable_thinking` as llama.cpp's server reads it (a boolean; other types are an error). */
function kwargThinking(kwargs: Record<string, unknown> | undefined): boolean | undefined {
  if (kwargs === undefined || kwargs === null || typeof kwargs !== "object") return undefined;
  const v = kwargs.enable_thinking;
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") invalid(`chat_template_kwargs.enable_thinking must be a boolean, got ${JSON.stringify(v)}`, "chat_template_kwargs.enable_thinking");
  return v;
}

export function normalizeApplyRequest(req: ApplyChatRequest): NormalizedApplyRequest {
  if (!isObject(req)) invalid("the request must be an object", "request");
  if (!Array.isArray(req.messages)) invalid("messages must be an array", "messages");
  const toolChoice = req.tool_choice ?? "auto";
  if (toolChoice !== "auto" && toolChoice !== "required" && toolChoice !== "none") {
    invalid(`tool_choice must be "auto", "required" or "none", got ${JSON.stringify(toolChoice)}`, "tool_choice");
  }
  const reasoningFormat = req.reasoning_format ?? "auto";
  if (reasoningFormat !== "none" && reasoningFormat !== "auto" && reasoningFormat !== "deepseek") {
    invalid(`reasoning_format must be "none", "auto" or "deepseek", got ${JSON.stringify(reasoningFormat)}`, "reasoning_format");
  }
  if (req.now !== undefined && !(req.now instanceof Date && !Number.isNaN(req.now.getTime()))) invalid("now must be a valid Date", "now");
  const grammar = req.grammar ?? "";
  if (typeof grammar !== "string") invalid("grammar must be GBNF text", "grammar");
  const tools = toolsOf(req.tools);
  const jsonSchema = schemaOf(req);
  if (tools !== null && toolChoice !== "none" && grammar !== "") {
    invalid("a grammar cannot be combined with tools (the tool-call grammar is generated); drop `grammar` or set tool_choice to \"none\"", "grammar");
  }
  if (jsonSchema !== null && grammar !== "") invalid("json_schema / response_format and grammar cannot be used together", "grammar");
  return {
    messages: req.messages,
    tools,
    toolChoice,
    parallelToolCalls: req.parallel_tool_calls ?? false,
    jsonSchema,
    addGenerationPrompt: req.add_generation_prompt ?? true,
    grammar,
    reasoningFormat,
    enableThinking: req.enable_thinking ?? kwargThinking(req.chat_template_kwargs) ?? true,
    chatTemplateKwargs: req.chat_template_kwargs,
    bosToken: req.bos_token ?? "",
    eosToken: req.eos_token ?? "",
    now: req.now ?? new Date(),
    analysisOverrides: req.analysis_overrides,
    templateLimits: templateLimitsOf(req.template_limits),
  };
}

function templateLimitsOf(limits: TemplateLimits | undefined): TemplateLimits | undefined {
  if (limits === undefined) return undefined;
  try {
    resolveLimits(limits);
  } catch (e) {
    invalid(`template_limits: ${(e as Error).message}`, "template_limits");
  }
  return limits;
}
