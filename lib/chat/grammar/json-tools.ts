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

/** `"key": "<id>"` or, with `numbers`, `"key": 123`. */
function idField(p: ChatPegBuilder, key: string, numbers: boolean): PegParser {
  const quoted = p.seq('"', p.toolId(p.stringContent('"')), '"');
  return p.atomic(p.seq(`"${key}"`, p.space(), ":", p.space(), numbers ? p.alt(quoted, p.toolId(p.jsonNumber())) : quoted));
}

function functionIsKey(p: ChatPegBuilder, o: JsonToolsOptions, effectiveArgsKey: string): PegParser {
  let choices = p.choice([]);
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const inner: PegParser[] = [];
    if (o.callIdKey) inner.push(p.optional(p.seq(idField(p, o.callIdKey, false), p.space(), p.optional(p.seq(",", p.space())))));
    if (o.genCallIdKey) inner.push(p.optional(p.seq(idField(p, o.genCallIdKey, true), p.space(), p.optional(p.seq(",", p.space())))));
    const args = p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, params));
    inner.push(o.argsKey ? p.seq(`"${effectiveArgsKey}"`, p.space(), ":", p.space(), args) : args);
    let object: PegParser;
    if (!o.argsKey && inner.length === 1) {
      object = inner[0]!;
    } else {
      object = p.seq("{", p.space());
      inner.forEach((f, i) => {
        object = object.then(f);
        if (i < inner.length - 1) object = object.then(p.space());
      });
      object = p.seq(object, p.space(), "}");
    }
    const tool = p.tool(p.seq(p.toolOpen("{"), p.space(), '"', p.toolName(fn.name), '"', p.space(), ":", p.space(), object, p.space(), p.toolClose("}")));
    choices = choices.or(p.rule(`tool-${fn.name}`, tool));
  }
  return choices;
}

function nestedKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const [namePrefix, nameField] = splitKey(nameKey);
  const [argsPrefix, argsField] = splitKey(argsKey);
  const prefix = namePrefix !== "" ? namePrefix : argsPrefix;
  const nestedName = namePrefix !== "" ? nameField : nameKey;
  const nestedArgs = argsPrefix !== "" ? argsField : argsKey;
  let choices = p.choice([]);
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const name = p.seq(`"${nestedName}"`, p.space(), ":", p.space(), p.atomic(p.seq('"', p.toolName(fn.name), '"')));
    const args = p.seq(`"${nestedArgs}"`, p.space(), ":", p.space(), p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, params)));
    const object = p.seq("{", p.space(), name, p.space(), ",", p.space(), args, p.space(), "}");
    let body = p.seq(p.toolOpen("{"), p.space());
    if (o.callIdKey && splitKey(o.callIdKey)[0] === "") {
      body = body.then(p.optional(p.seq(idField(p, o.callIdKey, false), p.space(), ",", p.space())));
    }
    if (o.genCallIdKey && splitKey(o.genCallIdKey)[0] === "") {
      body = body.then(p.optional(p.seq(idField(p, o.genCallIdKey, true), p.space(), ",", p.space())));
    }
    body = p.seq(body, `"${prefix}"`, p.space(), ":", p.space(), object, p.space(), p.toolClose("}"));
    choices = choices.or(p.rule(`tool-${fn.name}`, p.tool(body)));
  }
  return choices;
}

function flatKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const order = o.parametersOrder ?? [];
  const rank = (key: string) => {
    const i = order.indexOf(key);
    return i < 0 ? order.length : i;
  };
  let choices = p.choice([]);
  for (const fn of toolFunctions(o.tools)) {
    const params = toolParameters(fn);
    const name = p.seq(`"${nameKey}"`, p.space(), ":", p.space(), p.atomic(p.seq('"', p.toolName(fn.name), '"')));
    const args = p.seq(`"${argsKey}"`, p.space(), ":", p.space(), p.toolArgs(p.schema(p.json(), `tool-${fn.name}-schema`, params)));
    const fields: [PegParser, string][] = [
      [name, nameKey],
      [args, argsKey],
    ];
    if (o.callIdKey) fields.push([p.optional(idField(p, o.callIdKey, true)), o.callIdKey]);
    if (o.genCallIdKey) fields.push([p.optional(idField(p, o.genCallIdKey, true)), o.genCallIdKey]);
    // Stable sort, like std::sort on these few distinct ranks.
    fields.sort((a, b) => rank(a[1]) - rank(b[1]));
    const typeField = o.acceptOpenaiWrapper ? p.optional(p.seq('"type"', p.space(), ":", p.space(), '"function"', p.space(), ",", p.space())) : p.eps();
    let body = p.seq(p.toolOpen("{"), p.space(), typeField);
    fields.forEach(([f], i) => {
      body = body.then(f);
      if (i < fields.length - 1) body = p.seq(body, p.space(), ",", p.space());
    });
    body = p.seq(body, p.space(), p.toolClose("}"));
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
  const nameKey = o.nameKey || "name";
  const argsKey = o.argsKey || "arguments";
  let calls: PegParser;
  if (o.functionIsKey) calls = functionIsKey(p, o, argsKey);
  else if (splitKey(nameKey)[0] !== "" || splitKey(argsKey)[0] !== "") calls = nestedKeys(p, o, nameKey, argsKey);
  else calls = flatKeys(p, o, nameKey, argsKey);
  let section = calls;
  if (o.parallel) section = section.then(p.zeroOrMore(p.seq(p.space(), ",", p.space(), calls)));
  if (o.arrayWrapped) section = p.seq("[", p.space(), section, p.space(), "]");
  const rule = p.triggerRule("tool-call", p.seq(o.sectionStart, p.space(), section, p.space(), o.sectionEnd));
  return o.force ? rule : p.optional(rule);
}
