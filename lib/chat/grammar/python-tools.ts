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
              ? p.toolArgValue(p.choice([p.seq('"', p.stringContent('"'), '"'), p.seq("'", p.stringContent("'"), "'")]))
              : p.toolArgValue(o.allowJsonLiterals ? pythonOrJsonValue(p) : p.pythonValue());
            return p.toolArg(p.seq(p.toolArgOpen(p.seq(p.toolArgName(p.literal(prop)), "=")), value, p.toolArgClose(p.eps())));
          }),
        );
        args = p.seq(argChoice, p.zeroOrMore(p.seq(",", p.space(), argChoice)));
      }
      const tool = p.tool(p.seq(p.toolOpen(p.seq(p.toolName(p.literal(fn.name)), "(")), p.space(), p.toolArgs(args), p.space(), p.toolClose(p.literal(")"))));
      return p.rule(`tool-${fn.name}`, tool);
    }),
  );
  if (o.parallel) return p.seq("[", p.space(), choices, p.zeroOrMore(p.seq(",", p.space(), choices)), p.space(), "]");
  return p.seq("[", p.space(), choices, p.space(), "]");
}
