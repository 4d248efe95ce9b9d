/**
 * Gemma 4: `<|channel>thought ... <channel|>` reasoning blocks between content, and calls
 * `<|tool_call>call:NAME{key:<|"|>text<|"|>, n:1}<tool_call|>` in Gemma's own value syntax (mapped
 * to JSON by the `peg-gemma4` mapper). As `common_chat_params_init_gemma4`: when the prompt ends a
 * model turn (`<turn|>\n`), a new model turn is opened for the generation.
 */
import { buildChatPegParser } from "../../grammar/builder.js";
import { toolFunctions } from "../../tools.js";
import { planGrammar, renderPrompts, word } from "../plan-parts.js";
import type { NormalizedApplyRequest } from "../request.js";
import type { AppliedChatPlan } from "../types.js";

const OPEN_TURN = "<|turn>model\n";

export function applyGemma4(source: string, req: NormalizedApplyRequest): AppliedChatPlan {
  let { prompt, generationPrompt } = renderPrompts(source, req);
  if (req.addGenerationPrompt && prompt.endsWith("<turn|>\n")) {
    // after content + a call the template opens no new turn, which confuses the model
    generationPrompt = OPEN_TURN;
    prompt += generationPrompt;
  }
  const fns = toolFunctions(req.tools ?? []);
  const hasTools = fns.length > 0;
  const hasResponseFormat = req.jsonSchema !== null;
  const includeGrammar = hasResponseFormat || (hasTools && req.toolChoice !== "none");

  const parser = buildChatPegParser((p) => {
    const start = p.rule("start", p.optional(p.literal(OPEN_TURN)));
    if (req.reasoningFormat !== "none") {
      p.rule("thought", p.cat(() => p.literal("<|channel>thought"), () => p.space(), () => p.reasoning(p.until("<channel|>")), () => p.literal("<channel|>")));
    } else {
      p.rule("thought", p.content(p.cat(() => p.literal("<|channel>thought"), () => p.space(), () => p.until("<channel|>"), () => p.literal("<channel|>"))));
    }
    // empty channels before the thought are consumed but not constrained
    const emptyChannels = p.gbnf(p.zeroOrMore(p.cat(() => p.literal("<|channel>"), () => p.negate(p.literal("thought")))), "");
    const thought = p.alts(() => p.cat(() => p.peek(p.literal("<|channel>")), emptyChannels, () => p.ref("thought")), () => p.negate(p.literal("<|channel>")));

    if (hasResponseFormat) {
      // C++17 sequences `a << b` left to right
      const responseFormat = p.literal("```json").spaced(p.content(p.schema(p.json(), "response-format-schema", req.jsonSchema))).spaced(p.literal("```"));
      return p.cat(start, () => p.optional(thought), responseFormat);
    }

    if (hasTools && req.toolChoice !== "none") {
      p.rule("gemma4-string-content", p.until('<|"|>'));
      p.rule("gemma4-string", p.cat(() => p.literal('<|"|>'), () => p.ref("gemma4-string-content"), () => p.literal('<|"|>')));
      p.rule("gemma4-bool", p.jsonBool());
      p.rule("gemma4-null", p.jsonNull());
      p.rule("gemma4-number", p.jsonNumber());
      p.rule("gemma4-dict-key", p.cat(() => p.rule("gemma4-dict-key-name", p.chars("[^:}]", 1, -1)), () => p.literal(":")));
      p.rule("gemma4-dict-kv", p.cat(() => p.ref("gemma4-dict-key"), () => p.space(), () => p.ref("gemma4-value")));
      p.rule("gemma4-dict", () => {
        const ws = p.space();
        const member = p.ref("gemma4-dict-kv");
        const members = p.sequence([member, p.zeroOrMore(p.sequence([p.literal(","), ws, member]))]);
        return p.sequence([p.literal("{"), ws, p.choice([p.literal("}"), p.sequence([members, ws, p.literal("}")])])]);
      });
      p.rule("gemma4-array", () => {
        const ws = p.space();
        const value = p.ref("gemma4-value");
        const elements = p.sequence([value, p.zeroOrMore(p.sequence([p.literal(","), ws, value]))]);
        return p.sequence([p.literal("["), ws, p.choice([p.literal("]"), p.sequence([elements, ws, p.literal("]")])])]);
      });
      p.rule("gemma4-value", () =>
        p.choice([p.ref("gemma4-string"), p.ref("gemma4-dict"), p.ref("gemma4-array"), p.ref("gemma4-number"), p.ref("gemma4-bool"), p.ref("gemma4-null")]),
      );
      let choice = p.choice();
      for (const fn of fns) {
        const call = p.tool(
          p.sequence([p.toolOpen(p.cat(() => p.toolName(p.literal(fn.name)), () => p.peek(p.literal("{")))), p.toolArgs(p.ref("gemma4-dict"))]),
        );
        choice = choice.or(p.rule(`tool-${fn.name}`, call));
      }
      const min = req.toolChoice === "required" ? 1 : 0;
      const max = req.parallelToolCalls ? -1 : 1;
      const toolCall = p.triggerRule("tool-call", p.repeat(p.cat("<|tool_call>call:", choice, "<tool_call|>"), min, max));
      const scan = p.rule("scan-to-toolcall", p.until("<|tool_call>"));
      const content = p.rule("content", p.content(p.untilOneOf(["<|channel>", "<channel|>", "<|tool_call>"])));
      const message = p.rule("message", thought.then(content));
      return p.cat(start, () => p.zeroOrMore(message), scan, toolCall);
    }

    // trailing empty thought blocks and a stray <channel|> may follow the content
    const content = p.rule("content", p.content(p.untilOneOf(["<|channel>", "<channel|>"])));
    const message = p.rule("message", thought.then(content));
    return p.cat(start, () => p.oneOrMore(message));
  });

  const grammarLazy = includeGrammar && !(hasResponseFormat || (hasTools && req.toolChoice === "required"));
  return {
    prompt,
    format: "peg-gemma4",
    grammar: includeGrammar ? planGrammar(parser, req, grammarLazy, hasResponseFormat) : req.grammar,
    grammarLazy,
    grammarTriggers: includeGrammar ? [word("<|tool_call>")] : [],
    preservedTokens: ["<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|turn>"],
    additionalStops: [],
    generationPrompt,
    thinkingStartTag: "<|channel>thought",
    thinkingEndTags: ["<channel|>"],
    parser,
  };
}
