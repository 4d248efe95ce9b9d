/**
 * Gemma 4: `<|channel>thought ... <channel|>` reasoning blocks between content, and calls
 * `<|tool_call>call:NAME{key:<|"|>text<|"|>, n:1}<tool_call|>` in Gemma's own value syntax. As
 * `common_chat_params_init_gemma4`: when the prompt ends a model turn (`<turn|>\n`), a new model
 * turn is opened for the generation; older templates get tool results inside the assistant turn
 * (`tool_responses`). Its mapper (`common_chat_peg_gemma4_mapper`) rebuilds JSON arguments.
 */
import { parseJsonText } from "../../jinja/index.js";
import { emptyAssistantMessage, makeToolCall, type AssistantMessage } from "../messages.js";
import { escapeJsonStringInner } from "../normalize.js";
import { TAG } from "../tags.js";
import type { ChatFamily, FamilyAstView } from "./family.js";
import { familyPlan, grammarMode, shapeOf, toolChoice, word } from "./helpers.js";
import { findByTag, visitTopDown } from "./mapper-helpers.js";

const OPEN_TURN = "<|turn>model\n";

type JsonObject = Record<string, unknown>;

/** Gemma 4's older templates want tool results inside the assistant turn (`tool_responses`). */
function toolResponses(messages: JsonObject[]): JsonObject[] {
  const hasCalls = (m: JsonObject): boolean => Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
  const hasContent = (m: JsonObject): boolean => (typeof m.content === "string" && m.content !== "") || (Array.isArray(m.content) && m.content.length > 0);
  const out: JsonObject[] = [];
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !hasCalls(m)) {
      out.push(m);
      i++;
      continue;
    }
    const calls = [...(m.tool_calls as JsonObject[])];
    const reasoning = typeof m.reasoning_content === "string" ? m.reasoning_content : undefined;
    const responses: JsonObject[] = [];
    i++;
    while (i < messages.length && messages[i]!.role === "tool") {
      const t = messages[i]!;
      let response: unknown = null;
      if ("content" in t) {
        if (typeof t.content === "string") {
          try {
            response = parseJsonText(t.content);
          } catch {
            response = t.content;
          }
        } else response = t.content;
      }
      const call = calls[responses.length];
      let name = call && typeof (call.function as JsonObject | undefined)?.name === "string" ? ((call.function as JsonObject).name as string) : "";
      if (name === "") name = typeof t.tool_call_id === "string" ? t.tool_call_id : "";
      responses.push({ name, response });
      i++;
    }
    let content: unknown = undefined;
    const next = messages[i];
    if (next && next.role === "assistant" && !hasCalls(next) && hasContent(next)) {
      content = next.content;
      i++;
    }
    const built: JsonObject = { role: "assistant", tool_calls: calls };
    if (responses.length > 0) built.tool_responses = responses;
    if (content !== undefined && content !== null) built.content = content;
    if (reasoning !== undefined) built.reasoning_content = reasoning;
    out.push(built);
  }
  return out;
}

function joinJson(ids: readonly number[], f: (id: number) => string): string {
  return ids.map(f).join(",");
}

function gemma4ToJson(ast: FamilyAstView, id: number): string {
  const text = ast.text(id);
  if (text === "") return "";
  const kids = ast.children(id);
  const open = ast.isPartial(id);
  switch (ast.rule(id)) {
    case "gemma4-number":
    case "gemma4-bool":
    case "gemma4-null":
    case "gemma4-dict-key-name":
      return text;
    case "gemma4-string-content":
      return escapeJsonStringInner(text);
    case "gemma4-string":
      return kids.length === 0 ? '"' : `"${gemma4ToJson(ast, kids[0]!)}${open ? "" : '"'}`;
    case "gemma4-array":
      return `[${joinJson(kids, (k) => gemma4ToJson(ast, k))}${open ? "" : "]"}`;
    case "gemma4-dict-key":
      return `"${kids.length === 0 ? "" : escapeJsonStringInner(gemma4ToJson(ast, kids[0]!))}${open ? "" : '":'}`;
    case "gemma4-dict-kv":
      return kids.map((k) => gemma4ToJson(ast, k)).join("");
    case "gemma4-dict":
      return `{${joinJson(kids, (k) => gemma4ToJson(ast, k))}${open ? "" : "}"}`;
    case "gemma4-value":
      return kids.length === 0 ? "" : gemma4ToJson(ast, kids[0]!);
    default:
      return "";
  }
}

/**
 * Gemma 4: arguments rebuilt as JSON from the `gemma4-*` rules under `tool-args`; a call shows once
 * its name is complete, and containers and strings stay open while their node is partial.
 */
export function mapGemma4Ast(ast: FamilyAstView): AssistantMessage {
  const msg = emptyAssistantMessage();
  visitTopDown(ast, msg, (id) => {
    const name = findByTag(ast, id, TAG.TOOL_NAME);
    const args = findByTag(ast, id, TAG.TOOL_ARGS);
    if (name === -1 || args === -1 || ast.isPartial(name)) return;
    const kids = ast.children(args);
    msg.tool_calls.push(makeToolCall(ast.text(name), kids.length === 0 ? "" : gemma4ToJson(ast, kids[0]!)));
  });
  return msg;
}

export const gemma4: ChatFamily = {
  name: "gemma4",
  detect: (src) => src.includes("'<|tool_call>call:'"),
  rewriteMessages: (messages, src) => (src.includes("{#- OpenAI Chat Completions:") ? undefined : toolResponses(messages)),
  mapper: { format: "peg-gemma4", map: mapGemma4Ast },

  // after content + a call the template opens no new turn, which confuses the model
  promptVariant: (prompt, req) => (req.addGenerationPrompt && prompt.endsWith("<turn|>\n") ? "opens-turn" : ""),

  plan({ req, prompt }) {
    const opens = gemma4.promptVariant!(prompt, req) !== "";
    const { fns, useTools, hasResponseFormat, required, extractReasoning } = shapeOf(req);
    const include = hasResponseFormat || useTools;
    return familyPlan({
      format: "peg-gemma4",
      ...(opens ? { prompt: prompt + OPEN_TURN, generationPrompt: OPEN_TURN } : {}),
      build(p) {
        const start = p.rule("start", p.optional(p.literal(OPEN_TURN)));
        if (extractReasoning) p.rule("thought", p.seq("<|channel>thought", p.space(), p.reasoning(p.until("<channel|>")), "<channel|>"));
        else p.rule("thought", p.content(p.seq("<|channel>thought", p.space(), p.until("<channel|>"), "<channel|>")));
        // empty channels before the thought are consumed but not constrained
        const emptyChannels = p.gbnf(p.zeroOrMore(p.seq("<|channel>", p.negate(p.literal("thought")))), "");
        const thought = p.alt(p.seq(p.peek(p.literal("<|channel>")), emptyChannels, p.ref("thought")), p.negate(p.literal("<|channel>")));

        if (hasResponseFormat) {
          const responseFormat = p.literal("```json").spaced(p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema))).spaced(p.literal("```"));
          return { root: p.seq(start, p.optional(thought), responseFormat) };
        }
        if (useTools) {
          p.rule("gemma4-string-content", p.until('<|"|>'));
          p.rule("gemma4-string", p.seq('<|"|>', p.ref("gemma4-string-content"), '<|"|>'));
          p.rule("gemma4-bool", p.jsonBool());
          p.rule("gemma4-null", p.jsonNull());
          p.rule("gemma4-number", p.jsonNumber());
          p.rule("gemma4-dict-key", p.seq(p.rule("gemma4-dict-key-name", p.chars("[^:}]", 1, -1)), ":"));
          p.rule("gemma4-dict-kv", p.seq(p.ref("gemma4-dict-key"), p.space(), p.ref("gemma4-value")));
          p.rule("gemma4-dict", () => {
            const ws = p.space();
            const member = p.ref("gemma4-dict-kv");
            const members = p.seq(member, p.zeroOrMore(p.seq(",", ws, member)));
            return p.seq("{", ws, p.alt("}", p.seq(members, ws, "}")));
          });
          p.rule("gemma4-array", () => {
            const ws = p.space();
            const value = p.ref("gemma4-value");
            const elements = p.seq(value, p.zeroOrMore(p.seq(",", ws, value)));
            return p.seq("[", ws, p.alt("]", p.seq(elements, ws, "]")));
          });
          p.rule("gemma4-value", () => p.choice([p.ref("gemma4-string"), p.ref("gemma4-dict"), p.ref("gemma4-array"), p.ref("gemma4-number"), p.ref("gemma4-bool"), p.ref("gemma4-null")]));
          const choice = toolChoice(p, fns, (fn) => p.tool(p.seq(p.toolOpen(p.seq(p.toolName(p.literal(fn.name)), p.peek(p.literal("{")))), p.toolArgs(p.ref("gemma4-dict")))));
          const toolCall = p.triggerRule("tool-call", p.repeat(p.seq("<|tool_call>call:", choice, "<tool_call|>"), required ? 1 : 0, req.parallelToolCalls ? -1 : 1));
          const scan = p.rule("scan-to-toolcall", p.until("<|tool_call>"));
          const content = p.rule("content", p.content(p.untilOneOf(["<|channel>", "<channel|>", "<|tool_call>"])));
          const message = p.rule("message", thought.then(content));
          return { root: p.seq(start, p.zeroOrMore(message), scan, toolCall), callsOnly: p.seq(start, thought, toolCall) };
        }
        // trailing empty thought blocks and a stray <channel|> may follow the content
        const content = p.rule("content", p.content(p.untilOneOf(["<|channel>", "<channel|>"])));
        const message = p.rule("message", thought.then(content));
        return { root: p.seq(start, p.oneOrMore(message)) };
      },
      grammar: grammarMode(include, !(hasResponseFormat || (useTools && required))),
      triggers: include ? [word("<|tool_call>")] : [],
      preservedTokens: ["<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|turn>"],
      thinkingStartTag: "<|channel>thought",
      thinkingEndTags: ["<channel|>"],
    });
  },
};
