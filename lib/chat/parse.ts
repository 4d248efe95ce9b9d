/**
 * Parsing a model's output with a plan's PEG tree, then mapping the tagged AST to a message.
 * Mirrors llama.cpp's `common_chat_peg_parse` (the generation prompt is parsed in front of the
 * output; a partial parse that fails still yields what was recognized before the failure).
 */
import { LlamapegError } from "../errors.js";
import type { PegAst } from "../peg/ast.js";
import type { PegParseResult } from "../peg/parse.js";
import { formatMapper, type FamilyAstView } from "./families/registry.js";
import { mapChatAst, type MapperAst, type MapperNode } from "./mapper.js";
import { closeCutCalls, describeCutCall } from "./cut-calls.js";
import { emptyAssistantMessage, type AssistantMessage } from "./messages.js";
import type { ChatInputParser, ChatPlan } from "./plan.js";
import { decodeRange } from "./text-fields.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

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

/** Whether bytes after `end` hold more than whitespace. */
function unreadRest(input: Uint8Array, end: number): boolean {
  for (let i = end; i < input.length; i++) {
    const b = input[i]!;
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return true;
  }
  return false;
}

/** Whether the plan's format rebuilds messages with its own mapper instead of `mapChatAst`. */
export function hasFormatMapper(format: string): boolean {
  return formatMapper(format) !== undefined;
}

function familyAstView(ast: PegAst, view: ReturnType<typeof mapperView>): FamilyAstView {
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
  /** Set when the output does not match the plan: where (input offset) and why. */
  failure: { position: number; reason: string } | null;
}

/**
 * Parses `input` (the generation prompt already in front) and maps it, with `using` instead of the
 * plan's parser when given (an incremental parser). Never throws for output that does not match;
 * the caller decides from `failure`.
 *
 * A finished output is parsed as the reference parses it (`common_chat_peg_parse` always sets the
 * lenient flag): what the tree recognized up to the end of the output is the message, so an output
 * that ends where the format could go on (a reasoning block never closed, a call cut by max_tokens)
 * maps as far as it got, a cut call as that call with its arguments so far. Where the reference
 * throws (the output stops matching), `failure` says where. One rule of ours on top: with
 * `toolCallsRequired`, an output that ended by itself (not `truncated` by a token limit or a stop
 * string) without a call is a failure.
 */
export function runChatParser(plan: ChatPlan, input: Uint8Array, partial: boolean, using?: ChatInputParser | null, truncated = false): ChatParseOutcome {
  if (plan.parser === null) {
    // Plain content: everything after the generation prompt (the reference's fallback parser
    // would put the prompt into the content too).
    const message = emptyAssistantMessage();
    const skip = Math.min(input.length, encoder.encode(plan.generationPrompt).length);
    message.content = decodeRange(input, skip, input.length, partial);
    return { message, result: null, consumed: input.length, failure: null };
  }
  // Stray invalid UTF-8 in a model's output reads as U+FFFD instead of failing the parse (the
  // reference fails, and a tool call after the stray byte would become content).
  const result = (using ?? plan.parser).parse(input, { partial: true, lossyUtf8: true });
  if (result.type === "fail" && !(partial && result.end > 0)) {
    return { message: emptyAssistantMessage(), result, consumed: 0, failure: { position: result.end, reason: `the model output does not match the expected ${plan.format} format` } };
  }
  if (!partial && plan.referenceMode !== true && result.type === "success" && unreadRest(input, result.end)) {
    // The reference's lenient final parse stops where the format stops matching and drops the
    // rest (a call whose value the grammar does not take vanishes, with no error): here the rest is
    // a failure, so the session keeps it as content with a parse_error.
    return { message: emptyAssistantMessage(), result, consumed: 0, failure: { position: result.end, reason: `the model output does not match the expected ${plan.format} format` } };
  }
  const view = mapperView(result.ast, input, partial);
  const special = formatMapper(plan.format);
  const message = special !== undefined ? special(familyAstView(result.ast, view)) : mapChatAst(view);
  if (!partial && !truncated && plan.toolCallsRequired === true && message.tool_calls.length === 0) {
    return { message, result, consumed: view.consumed(), failure: { position: input.length, reason: `the model output does not match the expected ${plan.format} format: a tool call is required and it has none` } };
  }
  return { message, result, consumed: view.consumed(), failure: null };
}

export interface ParseChatOutputOptions {
  /** The output may continue (streaming): accept a prefix of a valid output. Default false. */
  partial?: boolean;
  /** The output was cut (max_tokens, a stop string): a missing required call is not an error. Default false. */
  truncated?: boolean;
}

/**
 * One-shot parse of a whole (or, with `partial`, a cut) model output into an assistant message.
 * Throws `ERR_CHAT_PARSE` (with the byte position in `where`) when the output does not match the
 * plan's format. A whole output's call cut inside its arguments comes back closed where it stands
 * (cut-calls.ts), or, where appending cannot make it JSON, is an ERR_CHAT_PARSE naming the call;
 * with a plan made in reference mode, its arguments stay as they are (as llama.cpp's).
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
  const { message, failure } = runChatParser(plan, input, partial, null, options.truncated === true);
  if (failure !== null) {
    const pos = Math.max(0, failure.position - prompt.length);
    throw new LlamapegError("ERR_CHAT_PARSE", `${failure.reason} at byte ${pos}: ${JSON.stringify(snippet(out, pos))}`, { where: `byte ${pos}` });
  }
  if (!partial && plan.referenceMode !== true) {
    // a call cut inside its arguments is closed where it stands; one that cannot be is an error
    const bad = closeCutCalls(message).find((c) => !c.closed);
    if (bad !== undefined) throw new LlamapegError("ERR_CHAT_PARSE", describeCutCall(bad, message.tool_calls[bad.index]!.function.name), { where: `tool_calls[${bad.index}]` });
  }
  return message;
}

function snippet(bytes: Uint8Array, pos: number): string {
  const s = decoder.decode(bytes.subarray(pos, pos + 60));
  return pos + 60 < bytes.length ? `${s}…` : s;
}
