/**
 * Tool calls written as JSON with the function name inside (the "JSON-native" shape), e.g.
 * `<tool_call>{"name": "f", "arguments": {...}}</tool_call>`. Mirrors llama.cpp's
 * `common_chat_peg_builder::standard_json_tools` and its three layouts:
 * - flat keys: `{"name": "f", "arguments": {...}}` (optional id fields, fixed field order);
 * - nested keys (`function.name`): `{"id": "...", "function": {"name": "f", "arguments": {...}}}`;
 * - function name as key: `{"f": {...}}` or `{"f": {"arguments": {...}}}`.
 *
 * One rule per tool (`tool-<name>`) whose name is a literal; the arguments are `json()` wrapped in
 * the tool's JSON Schema (`tool-<name>-schema`), which constrains the exported grammar.
 * Nodes are created in the reference's order (`cat` = C++ `+` as GCC evaluates it), so the arena is
 * node-for-node the reference's.
 */
import type { PegParser } from "../../peg/builder.js";
import { toolFunctions, toolParameters, type ChatTool } from "../tools.js";
import type { ChatPegBuilder } from "./builder.js";

export interface JsonToolsOptions {
  /** Text before the calls (e.g. "<tool_call>"; "" for none). */
  sectionStart: string;
  sectionEnd: string;
  tools: readonly ChatTool[];
  /** Several calls, separated by commas. */
  parallel: boolean;
  /** tool_choice "required": the section must be there. */
  force: boolean;
  /** Key of the function name (default "name"); dot notation ("function.name") nests it. */
  nameKey?: string;
  /** Key of the arguments (default "arguments"). */
  argsKey?: string;
  /** Calls are wrapped in `[...]`. */
  arrayWrapped?: boolean;
  /** `{"<function name>": ...}` layout. */
  functionIsKey?: boolean;
  /** Key of an optional string/number id written by the model. */
  callIdKey?: string;
  /** Key of an optional generated id (string or integer). */
  genCallIdKey?: string;
  /** Order of the fields (keys not listed go last, in their default order). */
  parametersOrder?: readonly string[];
  /** Accept a leading `"type": "function",` (models that echo the OpenAI wrapper). */
  acceptOpenaiWrapper?: boolean;
}

function splitKey(key: string): [prefix: string, field: string] {
  const dot = key.indexOf(".");
  return dot < 0 ? ["", key] : [key.slice(0, dot), key.slice(dot + 1)];
}

/** Operand helpers: a literal / space built when `cat` reaches it. */
function ops(p: ChatPegBuilder) {
  return {
    L: (s: string) => () => p.literal(s),
    S: () => p.space(),
    /** `"\"" + tool_id(string_content('"')) + "\""` as three operands of a chain. */
    quotedId: () => [() => p.literal('"'), () => p.toolId(p.stringContent('"')), () => p.literal('"')] as const,
    /** `choice({ "\"" + tool_id(string_content) + "\"", tool_id(json_number()) })` */
    idChoice: () => p.choice([p.cat(() => p.literal('"'), () => p.toolId(p.stringContent('"')), () => p.literal('"')), p.toolId(p.jsonNumber())]),
    schemaArgs: (name: string, params: unknown) => () => p.toolArgs(p.schema(p.json(), `tool-${name}-schema`, params)),
  };
}

function functionIsKey(p: ChatPegBuilder, o: JsonToolsOptions, effectiveArgsKey: string): PegParser {
  const { L, S, quotedId, idChoice, schemaArgs } = ops(p);
  let choices = p.choice();
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const inner: PegParser[] = [];
    const comma = () => p.optional(p.cat(L(","), S));
    if (o.callIdKey) {
      const id = p.atomic(p.cat(L(`"${o.callIdKey}"`), S, L(":"), S, ...quotedId()));
      inner.push(p.optional(p.cat(id, S, comma)));
    }
    if (o.genCallIdKey) {
      const gen = p.atomic(p.cat(L(`"${o.genCallIdKey}"`), S, L(":"), S, idChoice));
      inner.push(p.optional(p.cat(gen, S, comma)));
    }
    let args = p.eps();
    args = o.argsKey ? p.cat(L(`"${effectiveArgsKey}"`), S, L(":"), S, schemaArgs(fn.name, params)) : schemaArgs(fn.name, params)();
    inner.push(args);
    let object = p.eps();
    if (!o.argsKey && inner.length === 1) {
      object = inner[0]!;
    } else {
      object = p.cat(L("{"), S);
      inner.forEach((f, i) => {
        object = p.cat(object, f);
        if (i < inner.length - 1) object = p.cat(object, S);
      });
      object = p.cat(object, S, L("}"));
    }
    const tool = p.tool(
      p.cat(() => p.toolOpen(p.literal("{")), S, L('"'), () => p.toolName(p.literal(fn.name)), L('"'), S, L(":"), S, object, S, () => p.toolClose(p.literal("}"))),
    );
    choices = choices.or(p.rule(`tool-${fn.name}`, tool));
  }
  return choices;
}

function nestedKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const { L, S, quotedId, idChoice, schemaArgs } = ops(p);
  let choices = p.choice();
  const [namePrefix, nameField] = splitKey(nameKey);
  const [argsPrefix, argsField] = splitKey(argsKey);
  const prefix = namePrefix !== "" ? namePrefix : argsPrefix;
  const nestedName = namePrefix !== "" ? nameField : nameKey;
  const nestedArgs = argsPrefix !== "" ? argsField : argsKey;
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const name = p.cat(L(`"${nestedName}"`), S, L(":"), S, () => p.atomic(p.cat(L('"'), () => p.toolName(p.literal(fn.name)), L('"'))));
    const args = p.cat(L(`"${nestedArgs}"`), S, L(":"), S, schemaArgs(fn.name, params));
    const object = p.cat(L("{"), S, name, S, L(","), S, args, S, L("}"));
    let body = p.cat(() => p.toolOpen(p.literal("{")), S);
    if (o.callIdKey && splitKey(o.callIdKey)[0] === "") {
      const id = p.atomic(p.cat(L(`"${o.callIdKey}"`), S, L(":"), S, ...quotedId()));
      body = p.cat(body, () => p.optional(p.cat(id, S, L(","), S)));
    }
    if (o.genCallIdKey && splitKey(o.genCallIdKey)[0] === "") {
      const gen = p.atomic(p.cat(L(`"${o.genCallIdKey}"`), S, L(":"), S, idChoice));
      body = p.cat(body, () => p.optional(p.cat(gen, S, L(","), S)));
    }
    const field = p.cat(L(`"${prefix}"`), S, L(":"), S, object);
    body = p.cat(body, field, S, () => p.toolClose(p.literal("}")));
    choices = choices.or(p.rule(`tool-${fn.name}`, p.tool(body)));
  }
  return choices;
}

function flatKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const { L, S, idChoice, schemaArgs } = ops(p);
  const order = o.parametersOrder ?? [];
  const rank = (key: string) => {
    const i = order.indexOf(key);
    return i < 0 ? order.length : i;
  };
  let choices = p.choice();
  const nameKeyParser = p.literal(`"${nameKey}"`);
  const argsKeyParser = p.literal(`"${argsKey}"`);
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const name = p.cat(nameKeyParser, S, L(":"), S, () => p.atomic(p.cat(L('"'), () => p.toolName(p.literal(fn.name)), L('"'))));
    const args = p.cat(argsKeyParser, S, L(":"), S, schemaArgs(fn.name, params));
    let id = p.eps();
    if (o.callIdKey) id = p.atomic(p.cat(L(`"${o.callIdKey}"`), S, L(":"), S, idChoice));
    let gen = p.eps();
    if (o.genCallIdKey) gen = p.atomic(p.cat(L(`"${o.genCallIdKey}"`), S, L(":"), S, idChoice));
    const fields: [PegParser, string][] = [
      [name, nameKey],
      [args, argsKey],
    ];
    if (o.callIdKey) fields.push([p.optional(id), o.callIdKey]);
    if (o.genCallIdKey) fields.push([p.optional(gen), o.genCallIdKey]);
    // Stable sort, like std::sort (insertion sort) on these few fields.
    fields.sort((a, b) => rank(a[1]) - rank(b[1]));
    let typeField = p.eps();
    if (o.acceptOpenaiWrapper) typeField = p.optional(p.cat(L('"type"'), S, L(":"), S, L('"function"'), S, L(","), S));
    let body = p.cat(() => p.toolOpen(p.literal("{")), S, typeField);
    fields.forEach(([f], i) => {
      body = p.cat(body, f);
      if (i < fields.length - 1) body = p.cat(body, S, L(","), S);
    });
    body = p.cat(body, S, () => p.toolClose(p.literal("}")));
    choices = choices.or(p.rule(`tool-${fn.name}`, p.tool(body)));
  }
  return choices;
}

/**
 * JSON-native tool calls inside `sectionStart ... sectionEnd` (a trigger rule `tool-call`, optional
 * unless `force`). ε when there are no tools.
 */
export function standardJsonTools(p: ChatPegBuilder, o: JsonToolsOptions): PegParser {
  if (toolFunctions(o.tools).length === 0) return p.eps();
  const { L, S } = ops(p);
  const nameKey = o.nameKey || "name";
  const argsKey = o.argsKey || "arguments";
  let calls = p.eps();
  if (o.functionIsKey) calls = functionIsKey(p, o, argsKey);
  else if (splitKey(nameKey)[0] !== "" || splitKey(argsKey)[0] !== "") calls = nestedKeys(p, o, nameKey, argsKey);
  else calls = flatKeys(p, o, nameKey, argsKey);
  const choices = calls;
  if (o.parallel) calls = p.cat(calls, () => p.zeroOrMore(p.cat(S, L(","), S, choices)));
  if (o.arrayWrapped) calls = p.cat(L("["), S, calls, S, L("]"));
  const section = p.triggerRule("tool-call", p.cat(L(o.sectionStart), S, calls, S, L(o.sectionEnd)));
  return o.force ? section : p.optional(section);
}
