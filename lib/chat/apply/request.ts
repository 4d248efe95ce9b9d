/**
 * The chat request (OpenAI field names, llama.cpp's reasoning options, two llamapeg extensions),
 * checked once and brought into one internal shape. `applyChatTemplate` and
 * `createChatCompletion` both use this validator; every rejection is ERR_INVALID_REQUEST whose
 * `where` (OpenAI's `param`) names the field.
 *
 * `response_format` follows OpenAI: `json_object` means a JSON object (`{"type": "object"}` unless
 * a `schema` is given), `json_schema` its `json_schema.schema` (a JSON object when absent or
 * empty). llama.cpp's own `json_schema` field wins when both are given; empty, it constrains nothing.
 */
import { boundedCache } from "../../cache.js";
import { LlamapegError } from "../../errors.js";
import { checkSchemaDepth, compileJsonSchema, type JsonWhitespace, type PropertyOrder } from "../../json-schema/index.js";
import type { TemplateAnalysisOverrides } from "../analysis/types.js";
import { parseChatMessages, type ChatMessage } from "../messages.js";
import type { ChatTool } from "../tools.js";
import { type TemplateLimits, resolveLimits } from "../../jinja/index.js";
import { isObject } from "../../json-syntax.js";

export type ReasoningFormat = "none" | "auto" | "deepseek";

/** `tool_choice`: a mode, or one named function the output must call. */
export type ToolChoice = "auto" | "required" | "none" | { type: "function"; function: { name: string } };

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object"; schema?: unknown }
  | { type: "json_schema"; json_schema: { name?: string; schema?: unknown; strict?: boolean } };

export interface ApplyChatRequest {
  messages: readonly unknown[];
  tools?: readonly unknown[] | null;
  /** Default "auto" (with tools). A named function: only that tool, and a call is required. */
  tool_choice?: ToolChoice;
  /** Default false, as llama.cpp's `common_chat_templates_inputs` (OpenAI's default is true). */
  parallel_tool_calls?: boolean;
  response_format?: ResponseFormat | null;
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
  /** llamapeg: replaces fields of the template analysis before the parser is generated (see `withOverrides`). */
  analysis_overrides?: TemplateAnalysisOverrides;
  /**
   * llamapeg: with tool_choice "required" or a named function, the grammar allows only the calls
   * (after the reasoning block where the template's syntax has one), no text before them. Default
   * true (a required call is a call); false opts in to llama.cpp's grammar, which lets text come
   * first.
   */
  calls_only?: boolean;
  /** Render budgets for the prompt (see docs/security.md). Default: DEFAULT_TEMPLATE_LIMITS. */
  template_limits?: TemplateLimits;
  /**
   * llamapeg: true renders, plans and parses tool calls exactly as llama.cpp does: floats printed
   * with 6 significant digits, JSON-only values and required-then-optional argument order in the
   * per-argument (tagged) syntaxes. Default false: Python's printing, Python literals read, the
   * schema's argument order admitted (docs/apply.md "Tool calls as models write them").
   */
  reference_mode?: boolean;
  /**
   * llamapeg: JSON whitespace in the plan's grammar (tool-call JSON, `response_format` schemas).
   * "canonical" (default): as templates serialize JSON, `", "` and `": "` and nothing inside
   * brackets, so fast-forward forces the separators; "flexible": llama.cpp's whitespace anywhere
   * between tokens. `reference_mode` is always "flexible". The parser reads any whitespace.
   */
  json_whitespace?: JsonWhitespace;
  /**
   * llamapeg: where the grammar lets an object's declared properties stand (tool arguments,
   * `response_format` schemas): "declared" (default: the schema's order, each optional one where
   * it stands, so fast-forward forces the names) or "any" (docs/json-schema.md, "Property order").
   * `reference_mode` is always "declared" (llama.cpp's own order). The parser reads any order.
   */
  json_property_order?: PropertyOrder;
}

/** The request after validation. */
export interface NormalizedApplyRequest {
  messages: ChatMessage[];
  /** `null` when the request has no `tools` array (the reference tells "absent" from "empty"). */
  tools: ChatTool[] | null;
  /** The mode; a named function is "required" with `namedTool` set. */
  toolChoice: "auto" | "required" | "none";
  namedTool: string | null;
  /** Calls only, no text before them (meaningful when toolChoice is "required"). Default true. */
  callsOnly: boolean;
  parallelToolCalls: boolean;
  /** A non-empty JSON-schema object, or null. */
  jsonSchema: Record<string, unknown> | null;
  /** Where the schema came from, for messages about it. */
  jsonSchemaWhere: string;
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
  /** llama.cpp's printing, values and argument order (see `reference_mode`). */
  referenceMode: boolean;
  /** See `json_whitespace`: "flexible" whenever `referenceMode`. */
  jsonWhitespace: JsonWhitespace;
  /** See `json_property_order`: "declared" whenever `referenceMode`. */
  propertyOrder: PropertyOrder;
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);
const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

function invalid(message: string, where: string): never {
  throw new LlamapegError("ERR_INVALID_REQUEST", message, { where });
}

function optBool(r: Record<string, unknown>, key: string): boolean | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") invalid(`${key} must be a boolean, got ${JSON.stringify(v)}`, key);
  return v;
}

function optString(r: Record<string, unknown>, key: string): string | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") invalid(`${key} must be a string, got ${JSON.stringify(v)}`, key);
  return v;
}

/**
 * How strict the check is where the entries differ. A chat request (`applyChatTemplate`,
 * `createChatCompletion`) takes OpenAI's five roles; a render (`renderChatTemplate`) takes any
 * role, as llama.cpp's renderer does, since a template may define its own.
 */
export interface RequestRules {
  anyRole: boolean;
}

const CHAT_RULES: RequestRules = { anyRole: false };

function checkMessages(value: unknown, rules: RequestRules): ChatMessage[] {
  if (!Array.isArray(value)) invalid("messages must be an array", "messages");
  const messages = parseChatMessages(value, "messages");
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    if (!rules.anyRole && !ROLES.has(m.role)) invalid(`unknown role ${JSON.stringify(m.role)} (expected system, developer, user, assistant or tool)`, `messages[${i}].role`);
    if (m.tool_calls !== undefined && m.role !== "assistant") invalid(`only assistant messages carry tool calls (role is ${m.role})`, `messages[${i}].tool_calls`);
    for (const c of m.tool_calls ?? []) if (c.id !== "") calls.add(c.id);
    if (m.role === "tool") {
      if (m.tool_call_id === undefined) invalid("a tool message needs the id of the call it answers", `messages[${i}].tool_call_id`);
      if (!calls.has(m.tool_call_id)) invalid(`no earlier assistant tool call has id ${JSON.stringify(m.tool_call_id)}`, `messages[${i}].tool_call_id`);
    }
  });
  return messages;
}

function checkTools(tools: unknown): ChatTool[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) invalid("tools must be an array", "tools");
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) invalid("a tool must be an object", at);
    if (t.type !== "function") invalid(`unsupported tool type ${JSON.stringify(t.type)} (expected "function")`, `${at}.type`);
    const fn = t.function;
    if (!isObject(fn)) invalid("a tool needs a function object", `${at}.function`);
    if (typeof fn.name !== "string" || !TOOL_NAME.test(fn.name)) {
      invalid(`expected 1-64 characters of a-z, A-Z, 0-9, _ . -, got ${JSON.stringify(fn.name)}`, `${at}.function.name`);
    }
    if (seen.has(fn.name)) invalid(`duplicate tool name ${JSON.stringify(fn.name)}`, `${at}.function.name`);
    seen.add(fn.name);
    if (fn.description !== undefined && typeof fn.description !== "string") invalid("description must be a string", `${at}.function.description`);
    if (fn.parameters !== undefined && !isObject(fn.parameters)) invalid("parameters must be a JSON schema object", `${at}.function.parameters`);
    if (fn.parameters !== undefined) {
      try {
        checkSchemaDepth(fn.parameters, "#"); // before the template, the cache key or the compiler recurse over it
      } catch (e) {
        invalid((e as Error).message, `${at}.function.parameters`);
      }
    }
  });
  return tools as ChatTool[];
}

function checkToolChoice(value: unknown, tools: ChatTool[] | null): { toolChoice: NormalizedApplyRequest["toolChoice"]; namedTool: string | null } {
  if (value === undefined || value === null) return { toolChoice: "auto", namedTool: null };
  if (value === "auto" || value === "none") return { toolChoice: value, namedTool: null };
  if (value === "required") {
    if (tools === null || tools.length === 0) invalid(`tool_choice "required" needs tools`, "tool_choice");
    return { toolChoice: "required", namedTool: null };
  }
  if (isObject(value) && value.type === "function" && isObject(value.function) && typeof value.function.name === "string") {
    const name = value.function.name;
    if (!(tools ?? []).some((t) => t.function.name === name)) invalid(`no tool named ${JSON.stringify(name)} in tools`, "tool_choice.function.name");
    return { toolChoice: "required", namedTool: name };
  }
  invalid(`tool_choice must be "auto", "required", "none" or {type: "function", function: {name}}, got ${JSON.stringify(value)}`, "tool_choice");
}

/** Schemas (as JSON text) known to compile: a repeated request does not compile its schema again. */
const compiled = boundedCache<string, true>(64);

/** A schema that cannot be compiled at all is a request error (keywords the grammar cannot enforce are not). */
function compiles(schema: Record<string, unknown> | null, where: string, referenceMode: boolean): Record<string, unknown> | null {
  if (schema === null) return null;
  let text = "";
  try {
    checkSchemaDepth(schema, "#"); // before JSON.stringify recurses over it
    text = JSON.stringify(schema);
    // every input of the compile: the schema and its mode (the other option is fixed; a failure is not kept)
    const key = `${referenceMode ? "r" : "d"}${text}`;
    if (compiled.get(key) !== undefined) return schema;
    compileJsonSchema(schema, { unsupported: "ignore", schemaMode: referenceMode ? "reference" : "default" });
    compiled.set(key, true);
  } catch (e) {
    if (e instanceof LlamapegError) throw new LlamapegError("ERR_INVALID_REQUEST", `${where}: ${e.message}`, { where, cause: e });
    throw e;
  }
  return schema;
}

/** The response schema and the field it came from. */
function checkSchema(req: Record<string, unknown>): { schema: Record<string, unknown> | null; where: string } {
  let schema: unknown = req.json_schema;
  let where = "json_schema";
  if (typeof schema === "string") {
    try {
      schema = JSON.parse(schema);
    } catch {
      invalid("json_schema is not valid JSON text", "json_schema");
    }
  }
  if (schema !== undefined && schema !== null) {
    if (typeof schema === "boolean") return { schema: null, where };
    if (!isObject(schema)) invalid("a JSON schema must be an object", where);
    // An empty schema constrains nothing (the reference's reading of its own field).
    return { schema: Object.keys(schema).length > 0 ? schema : null, where };
  }
  const rf = req.response_format;
  if (rf === undefined || rf === null) return { schema: null, where };
  if (!isObject(rf)) invalid("response_format must be an object", "response_format");
  switch (rf.type) {
    case "text":
      return { schema: null, where };
    case "json_object":
      schema = rf.schema;
      where = "response_format.schema";
      break;
    case "json_schema":
      if (!isObject(rf.json_schema)) invalid("response_format.json_schema must be an object with a schema", "response_format.json_schema");
      schema = rf.json_schema.schema;
      where = "response_format.json_schema.schema";
      break;
    default:
      invalid(`response_format.type must be "text", "json_object" or "json_schema", got ${JSON.stringify(rf.type)}`, "response_format.type");
  }
  if (schema !== undefined && schema !== null && !isObject(schema)) invalid("expected a JSON schema object", where);
  // OpenAI's JSON mode: the answer is a JSON object.
  return { schema: isObject(schema) && Object.keys(schema).length > 0 ? schema : { type: "object" }, where };
}

/** `chat_template_kwargs.enable_thinking` as llama.cpp's server reads it (a boolean; other types are an error). */
function kwargThinking(kwargs: Record<string, unknown> | undefined): boolean | undefined {
  if (kwargs === undefined) return undefined;
  const v = kwargs.enable_thinking;
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") invalid(`chat_template_kwargs.enable_thinking must be a boolean, got ${JSON.stringify(v)}`, "chat_template_kwargs.enable_thinking");
  return v;
}

export function normalizeApplyRequest(request: ApplyChatRequest, rules: RequestRules = CHAT_RULES): NormalizedApplyRequest {
  if (!isObject(request)) invalid("the request must be an object", "request");
  const req = request as unknown as Record<string, unknown>;
  const messages = checkMessages(req.messages, rules);
  const tools = checkTools(req.tools);
  const { toolChoice, namedTool } = checkToolChoice(req.tool_choice, tools);
  const reasoningFormat = req.reasoning_format ?? "auto";
  if (reasoningFormat !== "none" && reasoningFormat !== "auto" && reasoningFormat !== "deepseek") {
    invalid(`reasoning_format must be "none", "auto" or "deepseek", got ${JSON.stringify(reasoningFormat)}`, "reasoning_format");
  }
  const now = req.now;
  if (now !== undefined && !(now instanceof Date && !Number.isNaN(now.getTime()))) invalid("now must be a valid Date", "now");
  const grammar = optString(req, "grammar") ?? "";
  const kwargs = req.chat_template_kwargs;
  if (kwargs !== undefined && kwargs !== null && !isObject(kwargs)) invalid("chat_template_kwargs must be an object", "chat_template_kwargs");
  const chatTemplateKwargs = (kwargs ?? undefined) as Record<string, unknown> | undefined;
  const { schema, where: jsonSchemaWhere } = checkSchema(req);
  const referenceMode = optBool(req, "reference_mode") ?? false;
  const whitespace = req.json_whitespace ?? "canonical";
  if (whitespace !== "canonical" && whitespace !== "flexible") invalid(`json_whitespace must be "canonical" or "flexible", got ${JSON.stringify(whitespace)}`, "json_whitespace");
  const propertyOrder = req.json_property_order ?? "declared";
  if (propertyOrder !== "declared" && propertyOrder !== "any") invalid(`json_property_order must be "declared" or "any", got ${JSON.stringify(propertyOrder)}`, "json_property_order");
  const jsonSchema = compiles(schema, jsonSchemaWhere, referenceMode);
  if (tools !== null && tools.length > 0 && toolChoice !== "none" && grammar !== "") {
    invalid('a grammar cannot be combined with tools (the tool-call grammar is generated); drop `grammar` or set tool_choice to "none"', "grammar");
  }
  if (jsonSchema !== null && grammar !== "") invalid("json_schema / response_format and grammar cannot be used together", "grammar");
  const overrides = req.analysis_overrides;
  if (overrides !== undefined && overrides !== null && !isObject(overrides)) invalid("analysis_overrides must be an object", "analysis_overrides");
  return {
    messages,
    tools,
    toolChoice,
    namedTool,
    callsOnly: optBool(req, "calls_only") ?? true,
    referenceMode,
    jsonWhitespace: referenceMode ? "flexible" : whitespace,
    propertyOrder: referenceMode ? "declared" : propertyOrder,
    parallelToolCalls: optBool(req, "parallel_tool_calls") ?? false,
    jsonSchema,
    jsonSchemaWhere,
    addGenerationPrompt: optBool(req, "add_generation_prompt") ?? true,
    grammar,
    reasoningFormat,
    enableThinking: optBool(req, "enable_thinking") ?? kwargThinking(chatTemplateKwargs) ?? true,
    chatTemplateKwargs,
    bosToken: optString(req, "bos_token") ?? "",
    eosToken: optString(req, "eos_token") ?? "",
    now: (now as Date | undefined) ?? new Date(),
    analysisOverrides: (overrides ?? undefined) as TemplateAnalysisOverrides | undefined,
    templateLimits: templateLimitsOf(req.template_limits as TemplateLimits | undefined),
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
