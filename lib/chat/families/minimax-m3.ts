/**
 * MiniMax M3: every tool tag carries the namespace token `]<]minimax[>[`:
 * `NS<tool_call> NS<invoke name="NAME"> NS<key>value NS</key> ... NS</invoke> NS</tool_call>`, values
 * expanded recursively as XML (objects as nested keys, arrays as `NS<item>` elements; unions try each
 * alternative); `<mm:think>` reasoning. As `common_chat_params_init_minimax_m3`; its mapper
 * (`common_chat_peg_minimax_m3_mapper`) rebuilds the JSON arguments from the nested tags.
 */
import { SchemaInfo } from "../../json-schema/schema-info.js";
import type { PegParser } from "../../peg/builder.js";
import type { ChatPegBuilder } from "../grammar/builder.js";
import { emptyAssistantMessage, makeToolCall, type AssistantMessage } from "../messages.js";
import { escapeJsonStringInner } from "../normalize.js";
import { TAG } from "../tags.js";
import { toolParameters } from "../tools.js";
import type { ChatFamily, FamilyAstView } from "./family.js";
import { findByTag, visitTopDown } from "./mapper-helpers.js";
import { declaredOrder } from "../grammar/argument-values.js";
import { callsAfterReasoning, familyPlan, grammarMode, requiredThenOptional, shapeOf, toolChoice, word } from "./helpers.js";
import { isObject } from "../../json-syntax.js";

const NS = "]<]minimax[>[";
const THINK_START = "<mm:think>";
const THINK_END = "</mm:think>";
const FC_START = `${NS}<tool_call>`;
const FC_END = `${NS}</tool_call>`;
const INVOKE_END = `${NS}</invoke>`;

/** Extra tags of the MiniMax M3 grammar. */
export const MINIMAX_M3_TAG = {
  TOOL_ARG_OBJECT: "tool-arg-object",
  TOOL_ARG_ARRAY: "tool-arg-array",
  TOOL_ARG_ITEM: "tool-arg-item",
} as const;

type Schema = Record<string, unknown>;

/** The XML-expanded argument grammar of one tool (the template's `to_xml()` macro). */
class ArgumentGrammar {
  constructor(
    private readonly p: ChatPegBuilder,
    private readonly info: SchemaInfo,
    /** Beyond the reference (reference_mode off): the declaration order too (grammar/argument-values.ts). */
    private readonly extended = false,
  ) {}

  element(tag: string, schema: unknown, ruleName: string): PegParser {
    const p = this.p;
    const close = `${NS}</${tag}>`;
    return p.rule(ruleName, p.toolArg(p.seq(p.toolArgOpen(p.seq(`${NS}<`, p.toolArgName(p.literal(tag)), ">")), this.value(schema, ruleName, close))));
  }

  value(schema: unknown, ruleName: string, close: string): PegParser {
    const p = this.p;
    // a string accepts anything, so a union with a string alternative is a string
    if (this.info.resolvesToString(schema)) return p.ac(p.seq(p.toolArgStringValue(p.until(close)), p.toolArgClose(p.literal(close))), close);
    const s = isObject(schema) ? schema : {};
    for (const keyword of ["oneOf", "anyOf"]) {
      const alts = s[keyword];
      if (Array.isArray(alts) && alts.length > 0) return p.choice(alts.map((alt, i) => this.value(alt, `${ruleName}-${i}`, close)));
    }
    const type = typeof s.type === "string" ? s.type : "";
    if (type === "object" && "properties" in s) {
      return p.seq(p.tag(MINIMAX_M3_TAG.TOOL_ARG_OBJECT, this.members(s, ruleName, close)), p.space(), p.toolArgClose(p.literal(close)));
    }
    if (type === "array" && "items" in s) {
      const itemClose = `${NS}</item>`;
      const item = p.rule(`${ruleName}-item`, p.tag(MINIMAX_M3_TAG.TOOL_ARG_ITEM, p.seq(`${NS}<item>`, this.value(s.items, `${ruleName}-item`, itemClose))));
      return p.seq(p.tag(MINIMAX_M3_TAG.TOOL_ARG_ARRAY, p.zeroOrMore(p.seq(p.space(), item))), p.space(), p.toolArgClose(p.literal(close)));
    }
    return p.seq(p.toolArgJsonValue(p.schema(p.json(), `${ruleName}-schema`, schema, false)), p.toolArgClose(p.literal(close)));
  }

  /**
   * Required properties in schema order, then any number of optional ones in any order; extended,
   * also the declaration order (the reference's order first, committed only up to `close`).
   */
  members(schema: Schema, prefix: string, close: string): PegParser {
    const props = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
    const req: PegParser[] = [];
    const opt: PegParser[] = [];
    const declared: { parser: PegParser; required: boolean }[] = [];
    for (const [key, keySchema] of Object.entries(props)) {
      const el = this.element(key, keySchema, `${prefix}-${key}`);
      (required.has(key) ? req : opt).push(el);
      declared.push({ parser: el, required: required.has(key) });
    }
    const p = this.p;
    const reference = requiredThenOptional(p, req, opt);
    const inOrder = declaredOrder(p, declared, this.extended);
    return inOrder === null ? reference : p.choice([p.seq(reference, p.space(), p.peek(p.literal(close))), inOrder]);
  }
}

const VALUE_TAGS = new Set<string>([TAG.TOOL_ARG_VALUE, TAG.TOOL_ARG_STRING_VALUE, MINIMAX_M3_TAG.TOOL_ARG_OBJECT, MINIMAX_M3_TAG.TOOL_ARG_ARRAY]);

function collect(ast: FamilyAstView, id: number, tag: string, out: number[]): void {
  for (const c of ast.children(id)) {
    if (ast.tag(c) === tag) out.push(c);
    else collect(ast, c, tag, out);
  }
}

function valueOf(ast: FamilyAstView, id: number): number {
  for (const c of ast.children(id)) if (VALUE_TAGS.has(ast.tag(c))) return c;
  return -1;
}

function m3Value(ast: FamilyAstView, id: number, closed: boolean): string {
  if (id === -1) return "";
  const tag = ast.tag(id);
  if (tag === MINIMAX_M3_TAG.TOOL_ARG_OBJECT) return m3Container(ast, id, true, closed);
  if (tag === MINIMAX_M3_TAG.TOOL_ARG_ARRAY) return m3Container(ast, id, false, closed);
  if (tag === TAG.TOOL_ARG_STRING_VALUE) return `"${escapeJsonStringInner(ast.text(id))}${closed ? '"' : ""}`;
  return ast.text(id); // numbers and booleans are written verbatim
}

function m3Container(ast: FamilyAstView, id: number, isObj: boolean, closed: boolean): string {
  const entries: number[] = [];
  collect(ast, id, isObj ? TAG.TOOL_ARG : MINIMAX_M3_TAG.TOOL_ARG_ITEM, entries);
  const parts: string[] = [];
  for (const e of entries) {
    let text: string;
    if (isObj) {
      const name = findByTag(ast, e, TAG.TOOL_ARG_NAME);
      text = name === -1 ? "" : `${JSON.stringify(ast.text(name))}:${m3Value(ast, valueOf(ast, e), !ast.isPartial(e))}`;
    } else {
      text = m3Value(ast, valueOf(ast, e), !ast.isPartial(e));
    }
    if (text !== "") parts.push(text);
  }
  return (isObj ? "{" : "[") + parts.join(",") + (closed ? (isObj ? "}" : "]") : "");
}

/**
 * MiniMax M3: arguments rebuilt as JSON from nested `tool-arg` / `tool-arg-object` /
 * `tool-arg-array` tags; containers and strings stay open while their node is partial.
 */
export function mapMinimaxM3Ast(ast: FamilyAstView): AssistantMessage {
  const msg = emptyAssistantMessage();
  visitTopDown(ast, msg, (id) => {
    const name = findByTag(ast, id, TAG.TOOL_NAME);
    if (name === -1) return;
    msg.tool_calls.push(makeToolCall(ast.text(name), m3Container(ast, id, true, !ast.isPartial(id))));
  });
  return msg;
}

export const minimaxM3: ChatFamily = {
  name: "minimax-m3",
  detect: (src) => src.includes("]<]minimax[>[") && src.includes("<tool_call>") && src.includes("<invoke name="),
  mapper: { format: "peg-minimax-m3", map: mapMinimaxM3Ast },

  plan({ req, generationPrompt }) {
    const { fns, useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      format: "peg-minimax-m3",
      build(p) {
        const gen = p.prefix(generationPrompt, THINK_START);
        const end = p.end();
        let reasoning = p.eps();
        if (extractReasoning) {
          const block = req.enableThinking
            ? p.seq(THINK_START, p.space(), p.ac(p.seq(p.reasoning(p.until(THINK_END)), THINK_END), THINK_END))
            : p.seq(THINK_START, p.ac(p.seq(p.until(THINK_END), THINK_END), THINK_END));
          // a turn without reasoning starts with a bare </mm:think> (from the prompt or the model)
          reasoning = p.optional(p.choice([block, p.literal(THINK_END)]));
        }
        if (hasResponseFormat) {
          const responseFormat = p.rule("response-format", p.seq("```json", p.space(), p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema)), p.space(), "```"));
          return { root: p.seq(gen, reasoning, responseFormat, end) };
        }
        if (!useTools) return { root: p.seq(gen, reasoning, p.content(p.rest()), end) };

        const choice = toolChoice(p, fns, (fn) => {
          const params = toolParameters(fn);
          const info = new SchemaInfo();
          info.resolveRefs(params);
          const body = "properties" in params ? new ArgumentGrammar(p, info, !req.referenceMode).members(params, `tool-${fn.name}-arg`, INVOKE_END) : p.eps();
          return p.tool(p.seq(p.toolOpen(p.seq(`${NS}<invoke name="`, p.toolName(p.literal(fn.name)), '">')), p.space(), body, p.space(), p.toolClose(p.literal(INVOKE_END))));
        });
        const calls = req.parallelToolCalls
          ? p.triggerRule("tool-call", p.seq(FC_START, p.space(), choice, p.zeroOrMore(p.seq(p.space(), choice)), p.space(), FC_END))
          : p.triggerRule("tool-call", p.seq(FC_START, p.space(), choice, p.space(), FC_END));
        const toolCalls = required ? calls : p.optional(calls);
        const contentBefore = p.content(p.until(FC_START));
        return { root: p.seq(gen, reasoning, contentBefore, toolCalls, end), callsOnly: p.seq(gen, callsAfterReasoning(p, reasoning, calls), end) };
      },
      grammar: grammarMode(include, !(hasResponseFormat || (useTools && required))),
      triggers: include ? [word(FC_START)] : [],
      preservedTokens: [NS, "<tool_call>", "</tool_call>", THINK_START, THINK_END],
      thinkingStartTag: THINK_START,
      thinkingEndTags: [THINK_END],
    });
  },
};
