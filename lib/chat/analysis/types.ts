/**
 * The result of template analysis: a plain, JSON-serializable object. Its shape follows the
 * reference's analysis structs (`autoparser` in `common/chat-auto-parser.h`) field for field, in
 * camelCase, so the parser generator can follow `chat-auto-parser-generator.cpp` closely.
 */

/** How the model reasons (`reasoning_mode`). */
export type ReasoningMode =
  /** No reasoning markers found. */
  | "none"
  /** `<think>...</think>`; `start` may be empty when only the end delimits reasoning. */
  | "tag_based"
  /** Reasoning is only rendered alongside tool calls. */
  | "tools_only";

/** How content is wrapped (`content_mode`). */
export type ContentMode = "plain" | "always_wrapped" | "wrapped_with_reasoning";

/** Where a call id sits in a non-JSON tool call (`call_id_position`). */
export type CallIdPosition =
  | "none"
  /** `[CALL_ID]id[FUNC]name{args}` */
  | "pre_func_name"
  /** `[FUNC]name[CALL_ID]id{args}` */
  | "between_func_and_args"
  /** `[FUNC]name{args}[CALL_ID]id` */
  | "post_args";

/** How tool calls are spelled, in broad strokes (the reference's `tool_format`). */
export type ToolSyntax =
  | "none"
  /** The whole call is JSON: `{"name": "X", "arguments": {...}}` */
  | "json_native"
  /** Tags around the name, JSON arguments: `<function=X>{...}</function>` */
  | "tag_with_json"
  /** Tags around the name and each argument: `<param=key>value</param>` */
  | "tag_with_tagged";

export interface ReasoningAnalysis {
  mode: ReasoningMode;
  /** e.g. `<think>`, `[THINK]`, "" */
  start: string;
  /** e.g. `</think>`, `[BEGIN FINAL RESPONSE]` */
  end: string;
}

export interface ContentAnalysis {
  mode: ContentMode;
  /** e.g. `<response>`, "" */
  start: string;
  /** e.g. `</response>`, "" */
  end: string;
  requiresNonnullContent: boolean;
}

/** The tool section's syntax (the reference's `tool_format_analysis`). */
export interface ToolSyntaxAnalysis {
  mode: ToolSyntax;
  /** e.g. `<tool_call>`, `[TOOL_CALLS]`, "" */
  sectionStart: string;
  sectionEnd: string;
  /** Per-call markers, for templates that repeat a marker around each call. */
  perCallStart: string;
  perCallEnd: string;
  /** JSON calls keyed by the function name: `{"<name>": {...arguments}}`. */
  funNameIsKey: boolean;
  /** JSON calls inside an array `[...]`. */
  toolsArrayWrapped: boolean;
  /** The model emits the OpenAI `{"type": "function", "function": ...}` wrapper; trigger on it. */
  openaiWrapperTrigger: boolean;
  functionField: string;
  nameField: string;
  argsField: string;
  /** Where the caller's id goes (dotted path), "" when not rendered. */
  idField: string;
  /** A generated-id field the template renders (dotted path), "" when none. */
  genIdField: string;
  /** Field names in the order the template renders them. */
  parameterOrder: string[];
}

export interface ToolFunctionAnalysis {
  /** e.g. `<function=`, `"name": "`, `functions.` */
  namePrefix: string;
  /** e.g. `>`, `"`, `:0` */
  nameSuffix: string;
  /** Between the name and the arguments, e.g. `<tool_sep>`. */
  argsSeparator: string;
  /** e.g. `</function>` */
  close: string;
}

export interface ToolArgumentsAnalysis {
  /** Around all arguments, e.g. `<|tool_call_argument_begin|>`, `<args>`. */
  start: string;
  end: string;
  /** e.g. `<param=`, `<arg_key>`, `"` */
  namePrefix: string;
  /** e.g. `>`, `</arg_key>`, `":` */
  nameSuffix: string;
  /** e.g. "", `<arg_value>` */
  valuePrefix: string;
  /** e.g. `</param>`, `</arg_value>` */
  valueSuffix: string;
  /** Between arguments, e.g. "", "\n", "," */
  separator: string;
  /** Accept optional whitespace between argument tags. */
  tolerateIntertagWhitespace: boolean;
}

export interface ToolIdAnalysis {
  pos: CallIdPosition;
  /** e.g. `[CALL_ID]` */
  prefix: string;
  suffix: string;
}

export interface ToolsAnalysis {
  /** Named `format` as in the reference (`analyze_tools::format`); part of the analysis JSON and its overrides. */
  format: ToolSyntaxAnalysis;
  function: ToolFunctionAnalysis;
  arguments: ToolArgumentsAnalysis;
  callId: ToolIdAnalysis;
}

/** What the template can do, as the reference's `jinja::caps` probe reports it. */
export interface TemplateCaps {
  supportsTools: boolean;
  supportsToolCalls: boolean;
  supportsSystemRole: boolean;
  supportsParallelToolCalls: boolean;
  supportsPreserveReasoning: boolean;
  supportsReasoningEffort: boolean;
  supportsStringContent: boolean;
  supportsTypedContent: boolean;
  supportsObjectArguments: boolean;
}

/** A probe whose rendering failed; the analysis went on without what it would have found. */
export interface ProbeFailure {
  probe: string;
  message: string;
}

export interface TemplateAnalysis {
  /** sha256 of the template source (the cache key, with the special tokens). */
  templateHash: string;
  caps: TemplateCaps;
  /** What starts a user turn, e.g. `<|im_start|>user`. */
  userStart: string;
  /** What starts an assistant turn, e.g. `<|im_start|>assistant`. */
  assistantStart: string;
  reasoning: ReasoningAnalysis;
  content: ContentAnalysis;
  tools: ToolsAnalysis;
  /** Markers the tokenizer must keep whole (union of all non-empty markers, trimmed). */
  preservedTokens: string[];
  /** Literal stop strings, caught however they are tokenized. */
  additionalStops: string[];
  /** The post-analysis corrections that matched this template (see docs/analysis.md). */
  corrections: string[];
  /** Probes that could not render; empty for a fully analysed template. */
  probeFailures: ProbeFailure[];
}

/** A partial analysis, for overrides: any field at any depth may be given. */
export type TemplateAnalysisOverrides = DeepPartial<Omit<TemplateAnalysis, "templateHash">>;

export type DeepPartial<T> = T extends readonly (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

export function emptyTools(): ToolsAnalysis {
  return {
    format: {
      mode: "none",
      sectionStart: "",
      sectionEnd: "",
      perCallStart: "",
      perCallEnd: "",
      funNameIsKey: false,
      toolsArrayWrapped: false,
      openaiWrapperTrigger: false,
      functionField: "function",
      nameField: "name",
      argsField: "arguments",
      idField: "",
      genIdField: "",
      parameterOrder: [],
    },
    function: { namePrefix: "", nameSuffix: "", argsSeparator: "", close: "" },
    arguments: {
      start: "",
      end: "",
      namePrefix: "",
      nameSuffix: "",
      valuePrefix: "",
      valueSuffix: "",
      separator: "",
      tolerateIntertagWhitespace: false,
    },
    callId: { pos: "none", prefix: "", suffix: "" },
  };
}

/** Content is wrapped on both sides in every reply (the reference's `is_always_wrapped()`). */
export function isContentAlwaysWrapped(c: ContentAnalysis): boolean {
  return c.mode === "always_wrapped" && c.start !== "" && c.end !== "";
}
