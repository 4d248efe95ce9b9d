/**
 * Whole-output grammars from a syntax description (how a template spells its output): reasoning
 * block, content, and the three tool call shapes. These mirror the parser generator of llama.cpp's
 * autoparser (`chat-auto-parser-generator.cpp`); the description fields mirror its analysis structs
 * in camelCase, so template analysis fills them and hand-written syntaxes can too.
 */
import type { PegParser } from "../../peg/builder.js";
import { SchemaInfo } from "../../json-schema/schema-info.js";
import { toolFunctions, toolParameters, toolProperties, toolRequired, type ChatTool } from "../tools.js";
import { trimWhitespace } from "../normalize.js";
import type { ChatPegBuilder } from "./builder.js";
import { declaredOrder, argumentValue, pythonLiteralValue } from "./argument-values.js";
import { standardJsonTools } from "./json-tools.js";

export type ToolChoiceMode = "auto" | "required" | "none";

/** Where tool calls go and how the section around them looks. */
export interface ToolSectionSyntax {
  sectionStart: string;
  sectionEnd: string;
  perCallStart: string;
  perCallEnd: string;
  // JSON-native only:
  funNameIsKey?: boolean;
  toolsArrayWrapped?: boolean;
  openaiWrapperTrigger?: boolean;
  functionField?: string;
  nameField?: string;
  argsField?: string;
  idField?: string;
  genIdField?: string;
  parameterOrder?: string[];
}

/** How a function name is written in the tag shapes (`<function=` NAME `>` ... `</function>`). */
export interface ToolFunctionSyntax {
  namePrefix: string;
  nameSuffix: string;
  argsSeparator?: string;
  close: string;
}

/** How arguments are written in the tag shapes. */
export interface ToolArgumentsSyntax {
  start: string;
  end: string;
  namePrefix: string;
  nameSuffix: string;
  valuePrefix: string;
  valueSuffix: string;
  /** Accept whitespace between the last argument and the per-call end marker. */
  tolerateIntertagWhitespace?: boolean;
}

/**
 * An id the model writes between the function name and the arguments (`[CALL_ID]abc[ARGS]`), or
 * before the name right after the per-call start (`<|tool_call:begin|>abc<|tool_call:name|>f`).
 */
export interface ToolCallIdSyntax {
  /**
   * "between_func_and_args" (the default) and "pre_func_name" are parsed; "post_args" is ignored.
   * The reference parses only the first.
   */
  pos?: string;
  prefix: string;
  suffix: string;
}

export interface ToolsContext {
  tools: readonly ChatTool[];
  toolChoice: ToolChoiceMode;
  parallel: boolean;
  /** The reasoning parser that precedes content (ε when reasoning is not extracted). */
  reasoning: PegParser;
  /** Content always wrapped in these markers (both set), else bare. */
  contentStart?: string;
  contentEnd?: string;
  /**
   * Beyond the reference (off in reference mode): tagged arguments also take Python literals and
   * the declaration order (argument-values.ts).
   */
  extended?: boolean;
}

/** A tools parser: the whole output, and the same output with no text before the calls. */
export interface ToolsTree {
  parser: PegParser;
  /** Reasoning, then the calls (tool_choice "required" with calls only). */
  callsOnly: PegParser;
}

/**
 * Reasoning (when the syntax has a block), then `calls`: the calls-only variant of an output.
 * Whitespace is allowed between the two, none before the calls when there is no reasoning block.
 */
export function callsAfterReasoning(p: ChatPegBuilder, reasoning: PegParser, calls: PegParser): PegParser {
  return p.node(reasoning.id).kind === "epsilon" ? p.seq(reasoning, calls) : p.seq(reasoning, p.space(), calls);
}

/**
 * An optional reasoning block: `start` (may be "") then reasoning up to `end`, markers tolerant of
 * surrounding whitespace. ε when `end` is empty.
 */
export function reasoningParser(p: ChatPegBuilder, start: string, end: string): PegParser {
  if (end === "") return p.eps();
  const endTrimmed = trimWhitespace(end);
  if (start !== "") return p.optional(p.seq(p.optspace(start), p.reasoning(p.until(endTrimmed)), p.optspace(end)));
  return p.optional(p.seq(p.reasoning(p.until(endTrimmed)), p.optspace(end)));
}

function alwaysWrapped(ctx: { contentStart?: string; contentEnd?: string }): boolean {
  return !!ctx.contentStart && !!ctx.contentEnd;
}

/**
 * An output with no tool calls: reasoning then content (the rest of the output, or the text inside
 * the content markers). `extractingReasoning` false: text before the content start is content too.
 */
export function contentOnlyParser(
  p: ChatPegBuilder,
  ctx: { reasoning: PegParser; contentStart?: string; contentEnd?: string; extractingReasoning: boolean },
): PegParser {
  if (alwaysWrapped(ctx)) {
    const start = ctx.contentStart!;
    const end = ctx.contentEnd!;
    if (ctx.extractingReasoning) return p.seq(ctx.reasoning, start, p.content(p.until(end)), end, p.end());
    return p.seq(p.content(p.until(start)), start, p.content(p.until(end)), end, p.end());
  }
  return p.seq(ctx.reasoning, p.content(p.rest()), p.end());
}

function optionalWrappedContent(p: ChatPegBuilder, ctx: ToolsContext): PegParser {
  return alwaysWrapped(ctx) ? p.optional(p.seq(ctx.contentStart!, p.content(p.until(ctx.contentEnd!)), ctx.contentEnd!)) : p.eps();
}

/** JSON-native calls (name inside the JSON), after optional content. */
export function jsonNativeToolsParser(p: ChatPegBuilder, ctx: ToolsContext, section: ToolSectionSyntax): ToolsTree {
  let nameField = section.nameField ?? "name";
  let argsField = section.argsField ?? "arguments";
  const functionField = section.functionField ?? "function";
  if (functionField !== "" && functionField !== "function" && !nameField.includes(".")) {
    nameField = `${functionField}.${nameField}`;
    argsField = `${functionField}.${argsField}`;
  }
  const common = {
    tools: ctx.tools,
    parallel: ctx.parallel,
    force: ctx.toolChoice === "required",
    nameKey: nameField,
    argsKey: argsField,
    arrayWrapped: section.toolsArrayWrapped ?? false,
    functionIsKey: section.funNameIsKey ?? false,
    callIdKey: section.idField ?? "",
    genCallIdKey: section.genIdField ?? "",
    parametersOrder: section.parameterOrder ?? [],
    acceptOpenaiWrapper: section.openaiWrapperTrigger ?? false,
  };
  let tools: PegParser;
  if (section.sectionStart === "" && section.perCallStart !== "") {
    const single = standardJsonTools(p, { ...common, sectionStart: section.perCallStart, sectionEnd: section.perCallEnd });
    // The reference repeats the per-call block whatever parallel_tool_calls says (Hermes / Qwen 2.5
    // `<tool_call>` blocks: a second call always admitted); beyond it, parallel false is one call.
    tools = p.triggerRule("tool-calls", ctx.parallel || ctx.extended !== true ? p.oneOrMore(p.seq(single, p.space())) : p.seq(single, p.space()));
  } else {
    tools = standardJsonTools(p, { ...common, sectionStart: section.sectionStart, sectionEnd: section.sectionEnd, commaOptional: section.sectionStart !== "" });
  }
  const callsOnly = p.seq(callsAfterReasoning(p, ctx.reasoning, tools), p.end());
  if (alwaysWrapped(ctx)) return { parser: p.seq(ctx.reasoning, optionalWrappedContent(p, ctx), tools, p.end()), callsOnly };
  const toolStart = section.sectionStart || section.perCallStart || "{";
  return { parser: p.seq(ctx.reasoning, p.optional(p.content(p.until(toolStart))), tools, p.end()), callsOnly };
}

interface FuncParts {
  fn: ToolFunctionSyntax;
  section: ToolSectionSyntax;
  args: ToolArgumentsSyntax;
}

/** One call: name tags, optional id, arguments, close (atomic where a partial header must not show). */
function funcParser(
  p: ChatPegBuilder,
  parts: FuncParts,
  name: string,
  idSection: PegParser,
  haveId: boolean,
  args: PegParser,
  peek: PegParser | null,
  leadId: PegParser | null = null,
): PegParser {
  const { fn, section } = parts;
  let open = p.toolOpen(leadId === null ? p.seq(fn.namePrefix, p.toolName(p.literal(name)), fn.nameSuffix) : p.seq(leadId, fn.namePrefix, p.toolName(p.literal(name)), fn.nameSuffix));
  let matchedAtomic = false;
  let func: PegParser;
  if (fn.argsSeparator) open = p.seq(open, p.space(), fn.argsSeparator);
  if (fn.nameSuffix !== "") {
    func = p.seq(open, idSection, p.space(), args);
    matchedAtomic = true;
  } else if (haveId) {
    func = p.seq(p.atomic(p.seq(open, idSection)), p.space(), args);
    matchedAtomic = true;
  } else if (peek !== null) {
    func = p.seq(p.atomic(p.seq(open, idSection, p.space(), peek)), args);
    matchedAtomic = true;
  } else {
    func = p.seq(open, idSection, p.space(), args);
  }
  if (fn.close !== "") {
    func = p.seq(func, p.space(), p.toolClose(p.literal(fn.close)));
  } else if (section.perCallEnd !== "") {
    // Close only when the end marker is in sight, so "</" at the end of a stream does not close early.
    const closePeek = parts.args.tolerateIntertagWhitespace ? p.peek(p.seq(p.space(), section.perCallEnd)) : p.peek(p.literal(section.perCallEnd));
    func = p.seq(func, p.toolClose(closePeek));
  } else {
    func = p.seq(func, p.toolClose(p.space())); // an empty close still runs the mapper's close step
  }
  return matchedAtomic ? func : p.atomic(func);
}

/**
 * The id written before the name: text up to the id's suffix, which starts the name marker; only
 * where the id's prefix is the marker that opens the call (the calls wrapper writes it). The call
 * appears once its name has matched, so a partial id never shows.
 */
function leadingCallId(p: ChatPegBuilder, id: ToolCallIdSyntax | undefined, fn: ToolFunctionSyntax, section: ToolSectionSyntax): PegParser | null {
  if (id?.pos !== "pre_func_name" || id.suffix === "" || !fn.namePrefix.startsWith(id.suffix)) return null;
  if (id.prefix !== (section.perCallStart || section.sectionStart)) return null;
  return p.toolId(p.until(id.suffix));
}

function hasCallId(id: ToolCallIdSyntax | undefined, argsStart: string): id is ToolCallIdSyntax {
  return id !== undefined && (id.pos === undefined || id.pos === "between_func_and_args") && id.prefix !== "" && (id.suffix !== "" || argsStart !== "");
}

/** The tool calls section around `choices`, then the whole output. */
function wrapCalls(p: ChatPegBuilder, ctx: ToolsContext, section: ToolSectionSyntax, choices: PegParser, tagged: boolean): ToolsTree {
  const S = () => p.space();
  let calls: PegParser;
  if (section.perCallStart !== "") {
    const wrapped = tagged ? p.seq(section.perCallStart, S(), choices, S(), section.perCallEnd) : p.seq(section.perCallStart, choices, section.perCallEnd);
    if (tagged) {
      calls = ctx.parallel ? p.triggerRule("tool-call", p.seq(wrapped, p.zeroOrMore(p.seq(S(), wrapped)), S())) : p.triggerRule("tool-call", p.seq(wrapped, S()));
    } else {
      calls = ctx.parallel ? p.triggerRule("tool-call", p.seq(wrapped, p.zeroOrMore(p.seq(S(), wrapped)))) : p.triggerRule("tool-call", wrapped);
    }
    if (section.sectionStart !== "") {
      const end = section.sectionEnd === "" ? p.end() : tagged ? p.seq(section.sectionEnd, S()) : p.literal(section.sectionEnd);
      calls = p.triggerRule("tool-calls", p.seq(section.sectionStart, S(), calls, S(), end));
    }
  } else {
    // Between calls with no per-call markers: the reference's ", ", or the newline the templates
    // write (`</invoke>\n<invoke ...>`, MiniMax M2), which the reference rejects.
    const sep = p.seq(S(), p.optional(p.literal(",")), S());
    if (tagged) {
      calls = ctx.parallel
        ? p.triggerRule("tool-call", p.seq(section.sectionStart, S(), choices, p.zeroOrMore(p.seq(sep, choices)), S(), section.sectionEnd))
        : p.triggerRule("tool-call", p.seq(section.sectionStart, S(), choices, S(), section.sectionEnd));
    } else {
      calls = ctx.parallel
        ? p.triggerRule("tool-call", p.seq(section.sectionStart, choices, p.zeroOrMore(p.seq(sep, choices)), section.sectionEnd))
        : p.triggerRule("tool-call", p.seq(section.sectionStart, choices, section.sectionEnd));
    }
  }
  const required = calls;
  if (ctx.toolChoice !== "required") calls = p.optional(calls);
  const trigger = section.sectionStart || section.perCallStart;
  const before = trigger === "" ? p.eps() : p.until(trigger);
  return { parser: p.seq(ctx.reasoning, p.optional(p.content(before)), calls, p.end()), callsOnly: p.seq(callsAfterReasoning(p, ctx.reasoning, required), p.end()) };
}

/** Calls whose name is a tag and whose arguments are one JSON object. */
export function tagJsonToolsParser(
  p: ChatPegBuilder,
  ctx: ToolsContext,
  section: ToolSectionSyntax,
  fn: ToolFunctionSyntax,
  args: ToolArgumentsSyntax,
  callId?: ToolCallIdSyntax,
): ToolsTree {
  // The analysis reads the id section's closing marker as the name's suffix too when the template
  // writes an end marker after the JSON (Mistral Small 3.2 with eos `</s>`: name suffix `[ARGS]`,
  // then `([CALL_ID] id)? [ARGS]`), which no call matches; the reference keeps both. Beyond it: once.
  if (ctx.extended === true && hasCallId(callId, args.start) && callId.suffix !== "" && fn.nameSuffix === callId.suffix) fn = { ...fn, nameSuffix: "" };
  const choices = p.choice(
    toolFunctions(ctx.tools).map((f) => {
      let haveId = false;
      let idSection = p.eps();
      if (hasCallId(callId, args.start)) {
        idSection =
          callId.suffix !== ""
            ? p.seq(p.optional(p.seq(callId.prefix, p.toolId(p.until(callId.suffix)))), callId.suffix)
            : p.optional(p.seq(callId.prefix, p.toolId(p.until(args.start))));
        haveId = true;
      }
      let argsParser = p.toolArgs(p.schema(p.json(), `tool-${f.name}-schema`, toolParameters(f)));
      if (args.start !== "") argsParser = p.seq(args.start, argsParser);
      if (args.end !== "") argsParser = p.seq(argsParser, args.end);
      const peek = args.start !== "" ? p.peek(p.literal(args.start)) : null;
      return p.rule(`tool-${f.name}`, funcParser(p, { fn, section, args }, f.name, idSection, haveId, argsParser, peek, leadingCallId(p, callId, fn, section)));
    }),
  );
  return wrapCalls(p, ctx, section, choices, false);
}

/**
 * Calls whose name and arguments are tags. Required arguments in definition order, then optional
 * ones in any order; string-typed values are raw text up to the value suffix (quoted by the
 * mapper), others are JSON checked against their schema. With `ctx.extended`, also the declaration
 * order and Python literals (argument-values.ts).
 */
export function tagTaggedToolsParser(
  p: ChatPegBuilder,
  ctx: ToolsContext,
  section: ToolSectionSyntax,
  fn: ToolFunctionSyntax,
  args: ToolArgumentsSyntax,
  callId?: ToolCallIdSyntax,
): ToolsTree {
  const untilSuffix = p.rule("until-suffix", p.until(args.valueSuffix));
  const choices = p.choice(
    toolFunctions(ctx.tools).map((f) => {
      const params = toolParameters(f);
      const required = toolRequired(f);
      const info = new SchemaInfo();
      info.resolveRefs(params);
      const requiredParsers: PegParser[] = [];
      const optionalParsers: PegParser[] = [];
      const declared: { parser: PegParser; required: boolean }[] = [];
      const close = () => p.toolArgClose(p.literal(args.valueSuffix));
      for (const [param, schema] of toolProperties(f)) {
        const python = ctx.extended ? pythonLiteralValue(p, schema, true) : null;
        const value = info.resolvesToString(schema)
          ? p.ac(p.seq(p.toolArgStringValue(untilSuffix), close()), args.valueSuffix)
          : argumentValue(p, p.schema(p.json(), `tool-${f.name}-arg-${param}-schema`, schema, false), close, python);
        const arg = p.rule(`tool-${f.name}-arg-${param}`, p.toolArg(p.seq(p.toolArgOpen(p.seq(args.namePrefix, p.toolArgName(p.literal(param)), args.nameSuffix)), args.valuePrefix, value)));
        (required.has(param) ? requiredParsers : optionalParsers).push(arg);
        declared.push({ parser: arg, required: required.has(param) });
      }
      const withMarkers = (x: PegParser): PegParser => {
        let out = x;
        if (args.start !== "") out = p.seq(args.start, out);
        if (args.end !== "") out = p.seq(out, args.end);
        return out;
      };
      const inOrder = declaredOrder(p, declared, ctx.extended === true);
      const reference = withMarkers(requiredThenOptional(p, requiredParsers, optionalParsers));
      const seq = inOrder === null ? reference : p.choice([reference, withMarkers(inOrder)]);
      let idSection = p.eps();
      let haveId = false;
      if (hasCallId(callId, args.start)) {
        haveId = true;
        idSection =
          callId.suffix !== ""
            ? p.optional(p.seq(callId.prefix, p.toolId(p.until(callId.suffix)), callId.suffix))
            : p.optional(p.seq(callId.prefix, p.toolId(p.until(args.start))));
      }
      const peek = args.namePrefix !== "" && requiredParsers.length > 0 ? p.peek(p.literal(args.namePrefix)) : null;
      return p.rule(`tool-${f.name}`, funcParser(p, { fn, section, args }, f.name, idSection, haveId, seq, peek, leadingCallId(p, callId, fn, section)));
    }),
  );
  return wrapCalls(p, ctx, section, choices, true);
}

/**
 * Required arguments in order (whitespace between), then any number of optional ones in any order:
 *   S -> R1 space R2 ... (space (O1 | O2 | ...))*
 */
export function requiredThenOptional(p: ChatPegBuilder, required: readonly PegParser[], optional: readonly PegParser[]): PegParser {
  let args = p.eps();
  required.forEach((r, i) => {
    args = i > 0 ? p.seq(args, p.space(), r) : p.seq(args, r);
  });
  if (optional.length > 0) args = p.seq(args, p.zeroOrMore(p.seq(p.space(), p.choice([...optional]))));
  return args;
}
