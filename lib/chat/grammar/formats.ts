/**
 * Whole-output grammars from a format description: reasoning block, content, and the three tool
 * call shapes. These mirror the parser generator of llama.cpp's autoparser
 * (`chat-auto-parser-generator.cpp`); the description fields mirror its analysis structs in
 * camelCase, so template analysis fills them and hand-written formats can too.
 */
import type { PegParser } from "../../peg/builder.js";
import { SchemaInfo } from "../../json-schema/schema-info.js";
import { toolFunctions, toolParameters, toolProperties, toolRequired, type ChatTool } from "../tools.js";
import { isSpace } from "../normalize.js";
import type { ChatPegBuilder } from "./builder.js";
import { standardJsonTools } from "./json-tools.js";

export type ToolChoiceMode = "auto" | "required" | "none";

/** Where tool calls go and how the section around them looks. */
export interface ToolSectionFormat {
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
export interface ToolFunctionFormat {
  namePrefix: string;
  nameSuffix: string;
  argsSeparator?: string;
  close: string;
}

/** How arguments are written in the tag shapes. */
export interface ToolArgumentsFormat {
  start: string;
  end: string;
  namePrefix: string;
  nameSuffix: string;
  valuePrefix: string;
  valueSuffix: string;
  /** Accept whitespace between the last argument and the per-call end marker. */
  tolerateIntertagWhitespace?: boolean;
}

/** An id the model writes between the function name and the arguments (`[CALL_ID]abc[ARGS]`). */
export interface ToolCallIdFormat {
  /** Only "between_func_and_args" (the default) is parsed; other positions are ignored, as in the reference. */
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
}

/** Operand helpers for `cat`: a node built when the chain reaches it. */
function ops(p: ChatPegBuilder) {
  return { L: (t: string) => () => p.literal(t), S: () => p.space(), E: () => p.end() };
}

/**
 * An optional reasoning block: `start` (may be "") then reasoning up to `end`, markers tolerant of
 * surrounding whitespace. ε when `end` is empty.
 */
export function reasoningParser(p: ChatPegBuilder, start: string, end: string): PegParser {
  if (end === "") return p.eps();
  const endTrimmed = trimWhitespace(end);
  if (start !== "") return p.optional(p.cat(() => p.optspace(start), () => p.reasoning(p.until(endTrimmed)), () => p.optspace(end)));
  return p.optional(p.cat(() => p.reasoning(p.until(endTrimmed)), () => p.optspace(end)));
}

/** Strips C-locale whitespace at both ends (the reference's `trim_whitespace`). */
export function trimWhitespace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a])) a++;
  while (b > a && isSpace(s[b - 1])) b--;
  return s.slice(a, b);
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
  const { E } = ops(p);
  if (alwaysWrapped(ctx)) {
    const start = ctx.contentStart!;
    const end = ctx.contentEnd!;
    if (ctx.extractingReasoning) return p.cat(ctx.reasoning, start, () => p.content(p.until(end)), end, E);
    return p.cat(() => p.content(p.until(start)), start, () => p.content(p.until(end)), end, E);
  }
  return p.cat(ctx.reasoning, () => p.content(p.rest()), E);
}

function optionalWrappedContent(p: ChatPegBuilder, ctx: ToolsContext): PegParser {
  return alwaysWrapped(ctx) ? p.optional(p.cat(ctx.contentStart!, () => p.content(p.until(ctx.contentEnd!)), ctx.contentEnd!)) : p.eps();
}

/** JSON-native calls (name inside the JSON), after optional content. */
export function jsonNativeToolsParser(p: ChatPegBuilder, ctx: ToolsContext, format: ToolSectionFormat): PegParser {
  const { S, E } = ops(p);
  let nameField = format.nameField ?? "name";
  let argsField = format.argsField ?? "arguments";
  const functionField = format.functionField ?? "function";
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
    arrayWrapped: format.toolsArrayWrapped ?? false,
    functionIsKey: format.funNameIsKey ?? false,
    callIdKey: format.idField ?? "",
    genCallIdKey: format.genIdField ?? "",
    parametersOrder: format.parameterOrder ?? [],
    acceptOpenaiWrapper: format.openaiWrapperTrigger ?? false,
  };
  let tools = p.eps();
  if (format.sectionStart === "" && format.perCallStart !== "") {
    const single = standardJsonTools(p, { ...common, sectionStart: format.perCallStart, sectionEnd: format.perCallEnd });
    tools = p.triggerRule("tool-calls", p.oneOrMore(p.cat(single, S)));
  } else {
    tools = standardJsonTools(p, { ...common, sectionStart: format.sectionStart, sectionEnd: format.sectionEnd });
  }
  if (alwaysWrapped(ctx)) {
    const wrapped = optionalWrappedContent(p, ctx);
    return p.cat(ctx.reasoning, wrapped, tools, E);
  }
  const toolStart = format.sectionStart || format.perCallStart || "{";
  return p.cat(ctx.reasoning, () => p.optional(p.content(p.until(toolStart))), tools, E);
}

interface FuncParts {
  fn: ToolFunctionFormat;
  section: ToolSectionFormat;
  args: ToolArgumentsFormat;
}

/** One call: name tags, optional id, arguments, close (atomic where a partial header must not show). */
function funcParser(p: ChatPegBuilder, parts: FuncParts, name: string, idSection: PegParser, haveId: boolean, args: PegParser, peek: PegParser | null): PegParser {
  const { S } = ops(p);
  const { fn, section } = parts;
  let open = p.toolOpen(p.cat(fn.namePrefix, () => p.toolName(p.literal(name)), fn.nameSuffix));
  let matchedAtomic = false;
  let func = p.eps();
  if (fn.argsSeparator) open = p.cat(open, S, () => p.literal(fn.argsSeparator!));
  if (fn.nameSuffix !== "") {
    func = p.cat(open, idSection, S, args);
    matchedAtomic = true;
  } else if (haveId) {
    func = p.cat(() => p.atomic(p.cat(open, idSection)), S, args);
    matchedAtomic = true;
  } else if (peek !== null) {
    func = p.cat(() => p.atomic(p.cat(open, idSection, S, peek)), args);
    matchedAtomic = true;
  } else {
    func = p.cat(open, idSection, S, args);
  }
  if (fn.close !== "") {
    func = p.cat(func, S, () => p.toolClose(p.literal(fn.close)));
  } else if (section.perCallEnd !== "") {
    // Close only when the end marker is in sight, so "</" at the end of a stream does not close early.
    const closePeek = parts.args.tolerateIntertagWhitespace ? p.peek(p.cat(S, () => p.literal(section.perCallEnd))) : p.peek(p.literal(section.perCallEnd));
    func = p.cat(func, () => p.toolClose(closePeek));
  } else {
    func = p.cat(func, () => p.toolClose(p.space())); // an empty close still runs the mapper's close step
  }
  return matchedAtomic ? func : p.atomic(func);
}

function hasCallId(id: ToolCallIdFormat | undefined, argsStart: string): id is ToolCallIdFormat {
  return id !== undefined && (id.pos === undefined || id.pos === "between_func_and_args") && id.prefix !== "" && (id.suffix !== "" || argsStart !== "");
}

/** The tool calls section around `choices`, then the whole output. */
function wrapCalls(p: ChatPegBuilder, ctx: ToolsContext, section: ToolSectionFormat, choices: PegParser, tagged: boolean): PegParser {
  const { L, S, E } = ops(p);
  let calls = p.eps();
  if (section.perCallStart !== "") {
    const wrapped = tagged ? p.cat(section.perCallStart, S, choices, S, section.perCallEnd) : p.cat(section.perCallStart, choices, section.perCallEnd);
    if (tagged) {
      calls = ctx.parallel
        ? p.triggerRule("tool-call", p.cat(wrapped, () => p.zeroOrMore(p.cat(S, wrapped)), S))
        : p.triggerRule("tool-call", p.cat(wrapped, S));
    } else {
      calls = ctx.parallel ? p.triggerRule("tool-call", p.cat(wrapped, () => p.zeroOrMore(p.cat(S, wrapped)))) : p.triggerRule("tool-call", wrapped);
    }
    if (section.sectionStart !== "") {
      const inner = calls;
      const end = () => (section.sectionEnd === "" ? p.end() : tagged ? p.cat(L(section.sectionEnd), S) : p.literal(section.sectionEnd));
      calls = p.triggerRule("tool-calls", p.cat(L(section.sectionStart), S, inner, S, end));
    }
  } else {
    const sep = ", ";
    if (tagged) {
      calls = ctx.parallel
        ? p.triggerRule("tool-call", p.cat(section.sectionStart, S, choices, () => p.zeroOrMore(p.cat(sep, choices)), S, section.sectionEnd))
        : p.triggerRule("tool-call", p.cat(section.sectionStart, S, choices, S, section.sectionEnd));
    } else {
      calls = ctx.parallel
        ? p.triggerRule("tool-call", p.cat(section.sectionStart, choices, () => p.zeroOrMore(p.cat(sep, choices)), section.sectionEnd))
        : p.triggerRule("tool-call", p.cat(section.sectionStart, choices, section.sectionEnd));
    }
  }
  if (ctx.toolChoice !== "required") calls = p.optional(calls);
  const trigger = section.sectionStart || section.perCallStart;
  const before = trigger === "" ? p.eps() : p.until(trigger);
  return p.cat(ctx.reasoning, () => p.optional(p.content(before)), calls, E);
}

/** Calls whose name is a tag and whose arguments are one JSON object. */
export function tagJsonToolsParser(
  p: ChatPegBuilder,
  ctx: ToolsContext,
  section: ToolSectionFormat,
  fn: ToolFunctionFormat,
  args: ToolArgumentsFormat,
  callId?: ToolCallIdFormat,
): PegParser {
  let choices = p.choice();
  for (const f of toolFunctions(ctx.tools)) {
    let haveId = false;
    let idSection = p.eps();
    if (hasCallId(callId, args.start)) {
      idSection =
        callId.suffix !== ""
          ? p.cat(() => p.optional(p.cat(callId.prefix, () => p.toolId(p.until(callId.suffix)))), callId.suffix)
          : p.optional(p.cat(callId.prefix, () => p.toolId(p.until(args.start))));
      haveId = true;
    }
    let argsParser = p.toolArgs(p.schema(p.json(), `tool-${f.name}-schema`, toolParameters(f)));
    if (args.start !== "") argsParser = p.cat(() => p.literal(args.start), argsParser);
    if (args.end !== "") argsParser = p.cat(argsParser, () => p.literal(args.end));
    const peek = args.start !== "" ? p.peek(p.literal(args.start)) : null;
    const func = funcParser(p, { fn, section, args }, f.name, idSection, haveId, argsParser, peek);
    choices = choices.or(p.rule(`tool-${f.name}`, func));
  }
  return wrapCalls(p, ctx, section, choices, false);
}

/**
 * Calls whose name and arguments are tags. Required arguments in definition order, then optional
 * ones in any order; string-typed values are raw text up to the value suffix (quoted by the
 * mapper), others are JSON checked against their schema.
 */
export function tagTaggedToolsParser(
  p: ChatPegBuilder,
  ctx: ToolsContext,
  section: ToolSectionFormat,
  fn: ToolFunctionFormat,
  args: ToolArgumentsFormat,
  callId?: ToolCallIdFormat,
): PegParser {
  const { S } = ops(p);
  const untilSuffix = p.rule("until-suffix", p.until(args.valueSuffix));
  let choices = p.choice();
  for (const f of toolFunctions(ctx.tools)) {
    const params = toolParameters(f);
    const required = toolRequired(f);
    const info = new SchemaInfo();
    info.resolveRefs(params);
    const requiredParsers: PegParser[] = [];
    const optionalParsers: PegParser[] = [];
    for (const [param, schema] of toolProperties(f)) {
      const value = info.resolvesToString(schema)
        ? () => p.ac(p.cat(() => p.toolArgStringValue(untilSuffix), () => p.toolArgClose(p.literal(args.valueSuffix))), args.valueSuffix)
        : () =>
            p.cat(
              () => p.toolArgJsonValue(p.schema(p.json(), `tool-${f.name}-arg-${param}-schema`, schema, false)),
              () => p.toolArgClose(p.literal(args.valueSuffix)),
            );
      const arg = p.toolArg(p.cat(() => p.toolArgOpen(p.cat(args.namePrefix, () => p.toolArgName(p.literal(param)), args.nameSuffix)), args.valuePrefix, value));
      const named = p.rule(`tool-${f.name}-arg-${param}`, arg);
      (required.has(param) ? requiredParsers : optionalParsers).push(named);
    }
    let seq = p.eps();
    requiredParsers.forEach((r, i) => {
      if (i > 0) seq = p.cat(seq, S);
      seq = p.cat(seq, r);
    });
    if (optionalParsers.length > 0) {
      let anyOpt = p.choice();
      for (const o of optionalParsers) anyOpt = anyOpt.or(o);
      seq = p.cat(seq, () => p.repeat(p.cat(S, anyOpt), 0, -1));
    }
    if (args.start !== "") seq = p.cat(() => p.literal(args.start), seq);
    if (args.end !== "") seq = p.cat(seq, () => p.literal(args.end));
    let idSection = p.eps();
    let haveId = false;
    if (hasCallId(callId, args.start)) {
      haveId = true;
      idSection =
        callId.suffix !== ""
          ? p.optional(p.cat(callId.prefix, () => p.toolId(p.until(callId.suffix)), callId.suffix))
          : p.optional(p.cat(callId.prefix, () => p.toolId(p.until(args.start))));
    }
    const peek = args.namePrefix !== "" && requiredParsers.length > 0 ? p.peek(p.literal(args.namePrefix)) : null;
    const func = funcParser(p, { fn, section, args }, f.name, idSection, haveId, seq, peek);
    choices = choices.or(p.rule(`tool-${f.name}`, func));
  }
  return wrapCalls(p, ctx, section, choices, true);
}
