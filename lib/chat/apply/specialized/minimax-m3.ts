/**
 * MiniMax M3: every tool tag carries the namespace token `]<]minimax[>[`:
 * `NS<tool_call> NS<invoke name="NAME"> NS<key>value NS</key> ... NS</invoke> NS</tool_call>`, values
 * expanded recursively as XML (objects as nested keys, arrays as `NS<item>` elements; unions try each
 * alternative); `<mm:think>` reasoning. As `common_chat_params_init_minimax_m3` (format
 * `peg-minimax-m3`, whose mapper rebuilds the JSON arguments).
 */
import { SchemaInfo } from "../../../json-schema/schema-info.js";
import type { PegParser } from "../../../peg/builder.js";
import { MINIMAX_M3_TAG } from "../../format-mappers.js";
import { buildChatPegParser, type ChatPegBuilder } from "../../grammar/builder.js";
import { toolFunctions, toolParameters } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const NS = "]<]minimax[>[";
const THINK_START = "<mm:think>";
const THINK_END = "</mm:think>";
const FC_START = `${NS}<tool_call>`;
const FC_END = `${NS}</tool_call>`;
const INVOKE_END = `${NS}</invoke>`;

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** The XML-expanded argument grammar of one tool (the template's `to_xml()` macro). */
class ArgumentGrammar {
  constructor(
    private readonly p: ChatPegBuilder,
    private readonly info: SchemaInfo,
  ) {}

  element(tag: string, schema: unknown, ruleName: string): PegParser {
    const p = this.p;
    const close = `${NS}</${tag}>`;
    return p.rule(
      ruleName,
      p.toolArg(p.cat(() => p.toolArgOpen(p.cat(() => p.literal(`${NS}<`), () => p.toolArgName(p.literal(tag)), () => p.literal(">"))), () => this.value(schema, ruleName, close))),
    );
  }

  value(schema: unknown, ruleName: string, close: string): PegParser {
    const p = this.p;
    const closeTag = p.toolArgClose(p.literal(close));
    // a string accepts anything, so a union with a string alternative is a string
    if (this.info.resolvesToString(schema)) return p.ac(p.cat(() => p.toolArgStringValue(p.until(close)), closeTag), close);
    const s = isObject(schema) ? schema : {};
    for (const keyword of ["oneOf", "anyOf"]) {
      const alts = s[keyword];
      if (Array.isArray(alts) && alts.length > 0) return p.choice(alts.map((alt, i) => this.value(alt, `${ruleName}-${i}`, close)));
    }
    const type = typeof s.type === "string" ? s.type : "";
    if (type === "object" && "properties" in s) {
      return p.cat(() => p.tag(MINIMAX_M3_TAG.TOOL_ARG_OBJECT, this.members(s, ruleName)), () => p.space(), closeTag);
    }
    if (type === "array" && "items" in s) {
      const itemClose = `${NS}</item>`;
      const item = p.rule(`${ruleName}-item`, p.tag(MINIMAX_M3_TAG.TOOL_ARG_ITEM, p.cat(() => p.literal(`${NS}<item>`), () => this.value(s.items, `${ruleName}-item`, itemClose))));
      return p.cat(() => p.tag(MINIMAX_M3_TAG.TOOL_ARG_ARRAY, p.repeat(p.cat(() => p.space(), item), 0, -1)), () => p.space(), closeTag);
    }
    return p.cat(() => p.toolArgJsonValue(p.schema(p.json(), `${ruleName}-schema`, schema, false)), closeTag);
  }

  /** Required properties in schema order, then any number of optional ones in any order. */
  members(schema: Schema, prefix: string): PegParser {
    const p = this.p;
    const props = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
    const req: PegParser[] = [];
    const opt: PegParser[] = [];
    for (const [key, keySchema] of Object.entries(props)) {
      const element = this.element(key, keySchema, `${prefix}-${key}`);
      (required.has(key) ? req : opt).push(element);
    }
    let members = p.eps();
    req.forEach((r, i) => {
      if (i > 0) members = p.cat(members, () => p.space());
      members = members.then(r);
    });
    if (opt.length > 0) {
      let anyOptional = p.choice();
      for (const o of opt) anyOptional = anyOptional.or(o);
      members = p.cat(members, () => p.repeat(p.cat(() => p.space(), anyOptional), 0, -1));
    }
    return members;
  }
}

export function applyMinimaxM3(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  const { prompt, generationPrompt } = renderPrompts(source, req);
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const gen = p.prefix(generationPrompt, THINK_START);
    const end = p.end();
    let reasoning = p.eps();
    if (req.reasoningFormat !== "none") {
      const block = req.enableThinking
        ? p.cat(() => p.literal(THINK_START), () => p.space(), () => p.ac(p.cat(() => p.reasoning(p.until(THINK_END)), () => p.literal(THINK_END)), THINK_END))
        : p.cat(() => p.literal(THINK_START), () => p.ac(p.cat(() => p.until(THINK_END), () => p.literal(THINK_END)), THINK_END));
      // a turn without reasoning starts with a bare </mm:think> (from the prompt or the model)
      reasoning = p.optional(p.choice([block, p.literal(THINK_END)]));
    }
    if (hasResponseFormat) {
      const responseFormat = p.rule(
        "response-format",
        p.cat(() => p.literal("```json"), () => p.space(), () => p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)), () => p.space(), () => p.literal("```")),
      );
      return p.cat(gen, reasoning, responseFormat, end);
    }
    if (!hasTools || req.toolChoice === "none") return p.cat(gen, reasoning, () => p.content(p.rest()), end);

    let choice = p.choice();
    for (const fn of fns) {
      const params = toolParameters(fn);
      const info = new SchemaInfo();
      info.resolveRefs(params);
      const args = new ArgumentGrammar(p, info);
      const body = "properties" in params ? args.members(params, `tool-${fn.name}-arg`) : p.eps();
      const func = p.tool(
        p.cat(
          () => p.toolOpen(p.cat(() => p.literal(`${NS}<invoke name="`), () => p.toolName(p.literal(fn.name)), () => p.literal('">'))),
          () => p.space(),
          body,
          () => p.space(),
          () => p.toolClose(p.literal(INVOKE_END)),
        ),
      );
      choice = choice.or(p.rule(`tool-${fn.name}`, func));
    }
    let toolCalls = p.eps(); // ε first, as the reference: keeps node ids identical
    toolCalls = req.parallelToolCalls
      ? p.triggerRule(
          "tool-call",
          p.cat(() => p.literal(FC_START), () => p.space(), choice, () => p.zeroOrMore(p.cat(() => p.space(), choice)), () => p.space(), () => p.literal(FC_END)),
        )
      : p.triggerRule("tool-call", p.cat(() => p.literal(FC_START), () => p.space(), choice, () => p.space(), () => p.literal(FC_END)));
    if (req.toolChoice !== "required") toolCalls = p.optional(toolCalls);
    const contentBefore = p.content(p.until(FC_START));
    return p.cat(gen, reasoning, contentBefore, toolCalls, end);
  });

  const grammarLazy = includeGrammar && !(hasResponseFormat || (hasTools && req.toolChoice === "required"));
  return {
    prompt,
    format: "peg-minimax-m3",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word(FC_START)] : [],
    preservedTokens: [NS, "<tool_call>", "</tool_call>", THINK_START, THINK_END],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: THINK_START,
    thinkingEndTags: [THINK_END],
    parser,
  };
}
