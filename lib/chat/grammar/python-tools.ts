/**
 * Python-style tool calls, `[name(arg1="value1", arg2=123)]` (LFM2 and similar). Mirrors llama.cpp's
 * `common_chat_peg_builder::python_style_tool_calls`: string-typed parameters take a quoted string
 * (either quote style), others a Python value (optionally also JSON true/false/null); the mapper
 * turns the values into JSON.
 */
import type { PegParser } from "../../peg/builder.js";
import { toolFunctions, toolProperties, type ChatTool } from "../tools.js";
import type { ChatPegBuilder } from "./builder.js";

export interface PythonToolsOptions {
  tools: readonly ChatTool[];
  parallel: boolean;
  /** Values may also be JSON-cased `true`/`false`/`null`. */
  allowJsonLiterals: boolean;
  /**
   * A function with parameters may also be called with none, `name()` (its template prints a call
   * whose optional arguments were all left out that way). Beyond the reference, whose rule needs
   * one argument; default false.
   */
  emptyArgs?: boolean;
  /**
   * String parameters in single quotes are read raw, as a template that prints `'` + value + `'`
   * writes them (LFM2.5): no escapes, a `'` inside the value is one not followed by `,`, `)`, a
   * quote or whitespace (`'O'Brien'`), tabs and newlines as they are. Beyond the reference (whose
   * Python string stops at the first quote); default false.
   */
  rawSingleQuoted?: boolean;
}

/** `'raw value'` as a tool-arg string value (see `rawSingleQuoted`); the arg's close ends the JSON string. */
function rawSingleQuotedValue(p: ChatPegBuilder): PegParser {
  // One string-value node per run: the empty one opens the JSON string (an empty value too); an
  // inner quote is atomic, so a `'` at the end of a partial output (the closing one, so far) is not
  // streamed as part of the value.
  const inner = p.zeroOrMore(p.choice([p.toolArgStringValue(p.chars("[^']", 1, -1)), p.atomic(p.toolArgStringValue(p.seq("'", p.chars("[^,)' \\t\\n\\r]", 1, 1))))]));
  return p.seq("'", p.toolArgStringValue(p.eps()), inner, "'");
}

/** Rule `python-or-json-value`: a Python value whose leaves also accept JSON literals. */
export function pythonOrJsonValue(p: ChatPegBuilder): PegParser {
  return p.rule("python-or-json-value", () => {
    const ws = p.space();
    const value = pythonOrJsonValue(p);
    const member = p.sequence([p.pythonString(), ws, p.literal(":"), ws, value]);
    const members = p.sequence([member, p.zeroOrMore(p.sequence([ws, p.literal(","), ws, member]))]);
    const dict = p.rule("python-or-json-dict", () => p.sequence([p.literal("{"), ws, p.choice([p.literal("}"), p.sequence([members, ws, p.literal("}")])]), ws]));
    const elements = p.sequence([value, p.zeroOrMore(p.sequence([p.literal(","), ws, value]))]);
    const array = p.rule("python-or-json-array", () => p.sequence([p.literal("["), ws, p.choice([p.literal("]"), p.sequence([elements, ws, p.literal("]")])]), ws]));
    return p.choice([dict, array, p.pythonString(), p.pythonNumber(), p.pythonBool(), p.pythonNull(), p.jsonBool(), p.jsonNull()]);
  });
}

/** `[call, call...]` (one call unless `parallel`); ε when there are no tools. */
export function pythonStyleToolCalls(p: ChatPegBuilder, o: PythonToolsOptions): PegParser {
  const fns = toolFunctions(o.tools);
  if (fns.length === 0) return p.eps();
  const choices = p.choice(
    fns.map((fn) => {
      let args = p.eps();
      const props = toolProperties(fn);
      if (props.length > 0) {
        const argChoice = p.choice(
          props.map(([prop, schema]) => {
            const isString = schema !== null && typeof schema === "object" && schema.type === "string";
            const value = isString
              ? o.rawSingleQuoted === true
                ? p.choice([p.toolArgValue(p.seq('"', p.stringContent('"'), '"')), rawSingleQuotedValue(p)])
                : p.toolArgValue(p.choice([p.seq('"', p.stringContent('"'), '"'), p.seq("'", p.stringContent("'"), "'")]))
              : p.toolArgValue(o.allowJsonLiterals ? pythonOrJsonValue(p) : p.pythonValue());
            return p.toolArg(p.seq(p.toolArgOpen(p.seq(p.toolArgName(p.literal(prop)), "=")), value, p.toolArgClose(p.eps())));
          }),
        );
        args = p.seq(argChoice, p.zeroOrMore(p.seq(",", p.space(), argChoice)));
        if (o.emptyArgs === true) args = p.optional(args);
      }
      const tool = p.tool(p.seq(p.toolOpen(p.seq(p.toolName(p.literal(fn.name)), "(")), p.space(), p.toolArgs(args), p.space(), p.toolClose(p.literal(")"))));
      return p.rule(`tool-${fn.name}`, tool);
    }),
  );
  if (o.parallel) return p.seq("[", p.space(), choices, p.zeroOrMore(p.seq(",", p.space(), choices)), p.space(), "]");
  return p.seq("[", p.space(), choices, p.space(), "]");
}
