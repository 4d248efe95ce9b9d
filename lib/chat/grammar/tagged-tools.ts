/**
 * Tool calls whose function name is a tag and whose arguments are tagged too (the "tag + tagged"
 * shape), e.g. `<tool_call><function=f><param=city>Paris</param></function></tool_call>`.
 * Mirrors llama.cpp's `common_chat_peg_builder::standard_constructed_tools`: parameter names may be
 * bare, double- or single-quoted; each value is raw text closed by the parameter closer. The mapper
 * turns the tags into a JSON object.
 */
import type { PegParser } from "../../peg/builder.js";
import { toolFunctions, toolProperties, type ChatTool } from "../tools.js";
import type { ChatPegBuilder } from "./builder.js";

export interface ConstructedToolMarkers {
  toolCallStartMarker?: string;
  toolCallEndMarker?: string;
  functionOpener?: string;
  functionNameSuffix?: string;
  functionCloser?: string;
  parameterKeyPrefix?: string;
  parameterKeySuffix?: string;
  parameterCloser?: string;
}

export interface ConstructedToolsOptions {
  markers?: ConstructedToolMarkers;
  tools: readonly ChatTool[];
  parallel: boolean;
  /** tool_choice "required". */
  force: boolean;
}

/** Tagged calls with tagged arguments (ε when there are no tools). Defaults as in the reference. */
export function standardConstructedTools(p: ChatPegBuilder, o: ConstructedToolsOptions): PegParser {
  const fns = toolFunctions(o.tools);
  if (fns.length === 0) return p.eps();
  const m = o.markers ?? {};
  const sectionStart = m.toolCallStartMarker ?? "<tool_call>";
  const sectionEnd = m.toolCallEndMarker ?? "</tool_call>";
  const opener = m.functionOpener ?? "<function=";
  const nameSuffix = m.functionNameSuffix ?? ">";
  const closer = m.functionCloser ?? "</function>";
  const keyPrefix = m.parameterKeyPrefix ?? "<param=";
  const keySuffix = m.parameterKeySuffix ?? ">";
  const paramCloser = m.parameterCloser ?? "</param>";

  const choices = p.choice(
    fns.map((fn) => {
      let args = p.eps();
      const props = toolProperties(fn);
      if (props.length > 0) {
        const argChoice = p.choice(
          props.map(([prop]) => {
            const argName = p.choice([p.literal(prop), p.literal(`"${prop}"`), p.literal(`'${prop}'`)]);
            return p.toolArg(p.seq(p.toolArgOpen(p.literal(keyPrefix)), p.toolArgName(argName), keySuffix, p.toolArgValue(p.until(paramCloser)), p.toolArgClose(p.literal(paramCloser))));
          }),
        );
        args = p.zeroOrMore(p.seq(argChoice, p.space()));
      }
      const tool = p.tool(p.seq(p.toolOpen(p.seq(opener, p.toolName(p.literal(fn.name)), nameSuffix)), p.space(), p.toolArgs(args), p.space(), p.toolClose(p.literal(closer))));
      return p.rule(`tool-${fn.name}`, tool);
    }),
  );
  const section = o.parallel
    ? p.triggerRule("tool-call", p.seq(sectionStart, p.space(), p.oneOrMore(p.seq(choices, p.space())), sectionEnd))
    : p.triggerRule("tool-call", p.seq(sectionStart, p.space(), choices, p.space(), sectionEnd));
  return o.force ? section : p.optional(section);
}
