/**
 * Parsing a model's output with a plan's PEG tree, then mapping the tagged AST to a message.
 * Mirrors llama.cpp's `common_chat_peg_parse` (the generation prompt is parsed in front of the
 * output; a partial parse that fails still yields what was recognized before the failure).
 */
import { LlamapegError } from "../errors.js";
import type { PegAst } from "../peg/ast.js";
import type { PegParseResult } from "../peg/parse.js";
import { mapGemma4Ast, mapMinimaxM3Ast, type FormatAstView } from "./format-mappers.js";
import { mapChatAst, type MapperAst, type MapperNode } from "./mapper.js";
import { emptyAssistantMessage, type AssistantMessage } from "./messages.js";
import type { ChatInputParser, ChatPlan } from "./plan.js";
import { TAG } from "./tags.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/** Length of `bytes[0, end)` without a UTF-8 sequence cut short by `end`. */
export function completeUtf8Prefix(bytes: Uint8Array, end: number): number {
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const b = bytes[end - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? end - back : end;
  }
  return end;
}

/** Decodes bytes [start, end); on partial input a character cut by the end of the input is left out. */
function decodeRange(bytes: Uint8Array, start: number, end: number, partial: boolean): string {
  if (partial && end === bytes.length) end = Math.max(start, completeUtf8Prefix(bytes, end));
  return end > start ? decoder.decode(bytes.subarray(start, end)) : "";
}

interface AstNodeRef extends MapperNode {
  readonly id: number;
}

/** Adapts a PEG AST to the mapper through the AST's accessors (no per-node text is decoded unless read). */
function mapperView(ast: PegAst, input: Uint8Array, partial: boolean): MapperAst<AstNodeRef> & { consumed(): number } {
  let consumed = 0;
  return {
    roots: ast.roots,
    node(id: number): AstNodeRef {
      return { id, tag: ast.tag(id), children: ast.children(id) };
    },
    text(node: AstNodeRef): string {
      const end = ast.end(node.id);
      if (end > consumed) consumed = end;
      return decodeRange(input, ast.start(node.id), end, partial);
    },
    consumed: () => consumed,
  };
}

/** Formats whose messages are rebuilt by a format-specific mapper (the reference's format names). */
const FORMAT_MAPPERS: Readonly<Record<string, (ast: FormatAstView) => AssistantMessage>> = {
  "peg-gemma4": mapGemma4Ast,
  "peg-minimax-m3": mapMinimaxM3Ast,
};

/** Whether the plan's format rebuilds messages with its own mapper instead of `mapChatAst`. */
export function hasFormatMapper(format: string): boolean {
  return Object.hasOwn(FORMAT_MAPPERS, format);
}

function formatView(ast: PegAst, view: ReturnType<typeof mapperView>): FormatAstView {
  return {
    roots: ast.roots,
    tag: (id) => ast.tag(id),
    rule: (id) => ast.rule(id),
    children: (id) => ast.children(id),
    isPartial: (id) => ast.isPartial(id),
    text: (id) => view.text({ id, tag: "", children: [] }),
  };
}

export interface ChatParseOutcome {
  message: AssistantMessage;
  result: PegParseResult | null;
  /** Byte offset (in the parsed input, generation prompt included) up to which text went into the message. */
  consumed: number;
}

/**
 * Parses `input` (the generation prompt already in front) and maps it, with `using` instead of the
 * plan's parser when given (an incremental parser). Never throws for output that does not match;
 * the caller decides from `result.type`.
 */
export function runChatParser(plan: ChatPlan, input: Uint8Array, partial: boolean, using?: ChatInputParser | null): ChatParseOutcome {
  if (plan.parser === null) {
    // Plain content: everything after the generation prompt (the reference's fallback parser
    // would put the prompt into the content too).
    const message = emptyAssistantMessage();
    const skip = Math.min(input.length, encoder.encode(plan.generationPrompt).length);
    message.content = decodeRange(input, skip, input.length, partial);
    return { message, result: null, consumed: input.length };
  }
  // Stray invalid UTF-8 in a model's output reads as U+FFFD instead of failing the parse (the
  // reference fails, and a tool call after the stray byte would become content).
  let result = (using ?? plan.parser).parse(input, { partial, lossyUtf8: true });
  if (!partial && result.type === "fail") {
    // The reference parses a finished output leniently as well. An output that ends cleanly where
    // the format could go on is a finished answer: a plain reply where tool calls were allowed, a
    // reasoning block the model never closed. A tool call cut short is not; it stays a failure.
    const lenient = plan.parser.parse(input, { partial: true, lossyUtf8: true });
    if (lenient.type === "need_more_input" && !endsInsideToolCall(lenient.ast)) {
      const view = mapperView(lenient.ast, input, false);
      const special = FORMAT_MAPPERS[plan.format];
      const message = special !== undefined ? special(formatView(lenient.ast, view)) : mapChatAst(view);
      if (plan.toolCallsRequired !== true || message.tool_calls.length > 0) return { message, result: lenient, consumed: view.consumed() };
    }
  }
  if (result.type === "fail" && !(partial && result.end > 0)) {
    return { message: emptyAssistantMessage(), result, consumed: 0 };
  }
  const view = mapperView(result.ast, input, partial);
  const special = FORMAT_MAPPERS[plan.format];
  const message = special !== undefined ? special(formatView(result.ast, view)) : mapChatAst(view);
  return { message, result, consumed: view.consumed() };
}

const TOOL_TAGS: ReadonlySet<string> = new Set([TAG.TOOL, TAG.TOOL_OPEN, TAG.TOOL_NAME, TAG.TOOL_ID, TAG.TOOL_ARGS, TAG.TOOL_ARG, TAG.TOOL_ARG_OPEN, TAG.TOOL_ARG_NAME, TAG.TOOL_ARG_VALUE, TAG.TOOL_ARG_STRING_VALUE, TAG.TOOL_CLOSE, TAG.TOOL_ARG_CLOSE]);

/** Whether the parse stopped inside a tool call (a partial node with a tool tag). */
export function endsInsideToolCall(ast: PegAst): boolean {
  const stack = [...ast.roots];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (ast.isPartial(id) && TOOL_TAGS.has(ast.tag(id))) return true;
    stack.push(...ast.children(id));
  }
  return false;
}

export interface ParseChatOutputOptions {
  /** The output may continue (streaming): accept a prefix of a valid output. Default false. */
  partial?: boolean;
}

/**
 * One-shot parse of a whole (or, with `partial`, a cut) model output into an assistant message.
 * Throws `ERR_CHAT_PARSE` (with the byte position in `where`) when the output does not match the
 * plan's format.
 */
export function parseChatOutput(plan: ChatPlan, text: string | Uint8Array, options: ParseChatOutputOptions = {}): AssistantMessage {
  const partial = options.partial === true;
  const out = typeof text === "string" ? encoder.encode(text) : text;
  const prompt = encoder.encode(plan.generationPrompt);
  let input = out;
  if (prompt.length > 0) {
    input = new Uint8Array(prompt.length + out.length);
    input.set(prompt);
    input.set(out, prompt.length);
  }
  const { message, result } = runChatParser(plan, input, partial);
  if (result !== null && result.type === "fail" && !(partial && result.end > 0)) {
    const pos = Math.max(0, result.end - prompt.length);
    throw new LlamapegError(
      "ERR_CHAT_PARSE",
      `the model output does not match the expected ${plan.format} format at byte ${pos}: ${JSON.stringify(snippet(out, pos))}`,
      { where: `byte ${pos}` },
    );
  }
  return message;
}

function snippet(bytes: Uint8Array, pos: number): string {
  const s = decoder.decode(bytes.subarray(pos, pos + 60));
  return pos + 60 < bytes.length ? `${s}…` : s;
}
