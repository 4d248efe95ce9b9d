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
 * The arena has the reference's structure (the conformance test compares them).
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
  /**
   * The calls share one section and their templates write one per line (`<tool_calls>\n{...}\n{...}`,
   * MiniMax M1): the comma between them is optional. The reference requires it, which forces a
   * model trained on one call per line off its syntax at the second call.
   */
  commaOptional?: boolean;
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

/** `"\"" + tool_id(string_content('"')) + "\""` */
function quotedId(p: ChatPegBuilder): PegParser {
  return p.seq('"', p.toolId(p.stringContent('"')), '"');
}

/** `choice({ "\"" + tool_id(string_content) + "\"", tool_id(json_number()) })` */
function idChoice(p: ChatPegBuilder): PegParser {
  return p.choice([quotedId(p), p.toolId(p.jsonNumber())]);
}

function schemaArgs(p: ChatPegBuilder, name: string, params: unknown): PegParser {
  return p.toolArgs(p.schema(p.json(), `tool-${name}-schema`, params));
}

/** `"key" : value` with whitespace around the colon. */
function member(p: ChatPegBuilder, key: PegParser | string, value: PegParser): PegParser {
  return p.seq(key, p.space(), ":", p.space(), value);
}

/** The function name as a quoted string, shown only once complete. */
function quotedName(p: ChatPegBuilder, name: string): PegParser {
  return p.atomic(p.seq('"', p.toolName(p.literal(name)), '"'));
}

function functionIsKey(p: ChatPegBuilder, o: JsonToolsOptions, effectiveArgsKey: string): PegParser {
  return p.choice(
    toolFunctions(o.tools).map((fn) => {
      const params = toolParameters(fn);
      const inner: PegParser[] = [];
      const comma = () => p.optional(p.seq(",", p.space()));
      if (o.callIdKey) inner.push(p.optional(p.seq(p.atomic(member(p, `"${o.callIdKey}"`, quotedId(p))), p.space(), comma())));
      if (o.genCallIdKey) inner.push(p.optional(p.seq(p.atomic(member(p, `"${o.genCallIdKey}"`, idChoice(p))), p.space(), comma())));
      inner.push(o.argsKey ? member(p, `"${effectiveArgsKey}"`, schemaArgs(p, fn.name, params)) : schemaArgs(p, fn.name, params));
      let object: PegParser;
      if (!o.argsKey && inner.length === 1) {
        object = inner[0]!;
      } else {
        const parts: PegParser[] = [p.literal("{"), p.space()];
        inner.forEach((f, i) => {
          parts.push(f);
          if (i < inner.length - 1) parts.push(p.space());
        });
        object = p.seq(...parts, p.space(), "}");
      }
      const tool = p.tool(p.seq(p.toolOpen(p.literal("{")), p.space(), '"', p.toolName(p.literal(fn.name)), '"', p.space(), ":", p.space(), object, p.space(), p.toolClose(p.literal("}"))));
      return p.rule(`tool-${fn.name}`, tool);
    }),
  );
}

function nestedKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const [namePrefix, nameField] = splitKey(nameKey);
  const [argsPrefix, argsField] = splitKey(argsKey);
  const prefix = namePrefix !== "" ? namePrefix : argsPrefix;
  const nestedName = namePrefix !== "" ? nameField : nameKey;
  const nestedArgs = argsPrefix !== "" ? argsField : argsKey;
  return p.choice(
    toolFunctions(o.tools).map((fn) => {
      const params = toolParameters(fn);
      const name = member(p, `"${nestedName}"`, quotedName(p, fn.name));
      const args = member(p, `"${nestedArgs}"`, schemaArgs(p, fn.name, params));
      const object = p.seq("{", p.space(), name, p.space(), ",", p.space(), args, p.space(), "}");
      const body: PegParser[] = [p.toolOpen(p.literal("{")), p.space()];
      if (o.callIdKey && splitKey(o.callIdKey)[0] === "") body.push(p.optional(p.seq(p.atomic(member(p, `"${o.callIdKey}"`, quotedId(p))), p.space(), ",", p.space())));
      if (o.genCallIdKey && splitKey(o.genCallIdKey)[0] === "") body.push(p.optional(p.seq(p.atomic(member(p, `"${o.genCallIdKey}"`, idChoice(p))), p.space(), ",", p.space())));
      body.push(member(p, `"${prefix}"`, object), p.space(), p.toolClose(p.literal("}")));
      return p.rule(`tool-${fn.name}`, p.tool(p.seq(...body)));
    }),
  );
}

function flatKeys(p: ChatPegBuilder, o: JsonToolsOptions, nameKey: string, argsKey: string): PegParser {
  const order = o.parametersOrder ?? [];
  const rank = (key: string) => {
    const i = order.indexOf(key);
    return i < 0 ? order.length : i;
  };
  // the key literals are shared by every tool's rule, as in the reference
  const nameKeyParser = p.literal(`"${nameKey}"`);
  const argsKeyParser = p.literal(`"${argsKey}"`);
  return p.choice(
    toolFunctions(o.tools).map((fn) => {
      const params = toolParameters(fn);
      const fields: [PegParser, string][] = [
        [member(p, nameKeyParser, quotedName(p, fn.name)), nameKey],
        [member(p, argsKeyParser, schemaArgs(p, fn.name, params)), argsKey],
      ];
      if (o.callIdKey) fields.push([p.optional(p.atomic(member(p, `"${o.callIdKey}"`, idChoice(p)))), o.callIdKey]);
      if (o.genCallIdKey) fields.push([p.optional(p.atomic(member(p, `"${o.genCallIdKey}"`, idChoice(p)))), o.genCallIdKey]);
      // Stable sort, like std::sort (insertion sort) on these few fields.
      fields.sort((a, b) => rank(a[1]) - rank(b[1]));
      const typeField = o.acceptOpenaiWrapper ? p.optional(p.seq(member(p, '"type"', p.literal('"function"')), p.space(), ",", p.space())) : p.eps();
      const body: PegParser[] = [p.toolOpen(p.literal("{")), p.space(), typeField];
      fields.forEach(([f], i) => {
        body.push(f);
        if (i < fields.length - 1) body.push(p.space(), p.literal(","), p.space());
      });
      body.push(p.space(), p.toolClose(p.literal("}")));
      return p.rule(`tool-${fn.name}`, p.tool(p.seq(...body)));
    }),
  );
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
  const choices = calls;
  if (o.parallel) calls = p.seq(calls, p.zeroOrMore(p.seq(p.space(), o.commaOptional && !o.arrayWrapped ? p.optional(p.literal(",")) : p.literal(","), p.space(), choices)));
  if (o.arrayWrapped) calls = p.seq("[", p.space(), calls, p.space(), "]");
  const section = p.triggerRule("tool-call", p.seq(o.sectionStart, p.space(), calls, p.space(), o.sectionEnd));
  return o.force ? section : p.optional(section);
}
