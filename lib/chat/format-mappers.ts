/**
 * Mappers for the two formats whose arguments are not JSON text in the output and are rebuilt from
 * the tree: Gemma 4 (`<|"|>`-quoted strings, bare keys) and MiniMax M3 (nested tagged objects and
 * arrays). They mirror llama.cpp's `common_chat_peg_gemma4_mapper` and
 * `common_chat_peg_minimax_m3_mapper`: a call shows once its name is complete, and containers and
 * strings stay open while their node is partial, so the arguments only ever grow.
 */
import { emptyAssistantMessage, makeToolCall, type AssistantMessage } from "./messages.js";
import { escapeJsonStringInner } from "./normalize.js";
import { TAG } from "./tags.js";

/** What these mappers read from an AST. */
export interface FormatAstView {
  readonly roots: readonly number[];
  tag(id: number): string;
  rule(id: number): string;
  children(id: number): readonly number[];
  isPartial(id: number): boolean;
  text(id: number): string;
}

/** Extra tags of the MiniMax M3 grammar. */
export const MINIMAX_M3_TAG = {
  TOOL_ARG_OBJECT: "tool-arg-object",
  TOOL_ARG_ARRAY: "tool-arg-array",
  TOOL_ARG_ITEM: "tool-arg-item",
} as const;

/** First descendant with `tag`, at most `maxDepth` levels down; -1 if none. */
function findByTag(ast: FormatAstView, parent: number, tag: string, maxDepth = 3): number {
  for (const c of ast.children(parent)) {
    if (ast.tag(c) === tag) return c;
    if (maxDepth > 1) {
      const r = findByTag(ast, c, tag, maxDepth - 1);
      if (r !== -1) return r;
    }
  }
  return -1;
}

/** Visits nodes until a reasoning/content/tool node, which `onTool` or the text rules handle. */
function visitTopDown(ast: FormatAstView, msg: AssistantMessage, onTool: (id: number) => void): void {
  const stack = [...ast.roots].reverse();
  while (stack.length > 0) {
    const id = stack.pop()!;
    const tag = ast.tag(id);
    if (tag === TAG.REASONING) msg.reasoning_content += ast.text(id);
    else if (tag === TAG.CONTENT) msg.content += ast.text(id);
    else if (tag === TAG.TOOL) onTool(id);
    else {
      const kids = ast.children(id);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
  }
}

function joinJson(ids: readonly number[], f: (id: number) => string): string {
  return ids.map(f).join(",");
}

function gemma4ToJson(ast: FormatAstView, id: number): string {
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

/** Gemma 4: arguments rebuilt as JSON from the `gemma4-*` rules under `tool-args`. */
export function mapGemma4Ast(ast: FormatAstView): AssistantMessage {
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

function collect(ast: FormatAstView, id: number, tag: string, out: number[]): void {
  for (const c of ast.children(id)) {
    if (ast.tag(c) === tag) out.push(c);
    else collect(ast, c, tag, out);
  }
}

const VALUE_TAGS = new Set<string>([TAG.TOOL_ARG_VALUE, TAG.TOOL_ARG_STRING_VALUE, MINIMAX_M3_TAG.TOOL_ARG_OBJECT, MINIMAX_M3_TAG.TOOL_ARG_ARRAY]);

function valueOf(ast: FormatAstView, id: number): number {
  for (const c of ast.children(id)) if (VALUE_TAGS.has(ast.tag(c))) return c;
  return -1;
}

function m3Value(ast: FormatAstView, id: number, closed: boolean): string {
  if (id === -1) return "";
  const tag = ast.tag(id);
  if (tag === MINIMAX_M3_TAG.TOOL_ARG_OBJECT) return m3Container(ast, id, true, closed);
  if (tag === MINIMAX_M3_TAG.TOOL_ARG_ARRAY) return m3Container(ast, id, false, closed);
  if (tag === TAG.TOOL_ARG_STRING_VALUE) return `"${escapeJsonStringInner(ast.text(id))}${closed ? '"' : ""}`;
  return ast.text(id); // numbers and booleans are written verbatim
}

function m3Container(ast: FormatAstView, id: number, isObject: boolean, closed: boolean): string {
  const entries: number[] = [];
  collect(ast, id, isObject ? TAG.TOOL_ARG : MINIMAX_M3_TAG.TOOL_ARG_ITEM, entries);
  const parts: string[] = [];
  for (const e of entries) {
    let text: string;
    if (isObject) {
      const name = findByTag(ast, e, TAG.TOOL_ARG_NAME);
      text = name === -1 ? "" : `${JSON.stringify(ast.text(name))}:${m3Value(ast, valueOf(ast, e), !ast.isPartial(e))}`;
    } else {
      text = m3Value(ast, valueOf(ast, e), !ast.isPartial(e));
    }
    if (text !== "") parts.push(text);
  }
  return (isObject ? "{" : "[") + parts.join(",") + (closed ? (isObject ? "}" : "]") : "");
}

/** MiniMax M3: arguments rebuilt as JSON from nested `tool-arg` / `tool-arg-object` / `tool-arg-array` tags. */
export function mapMinimaxM3Ast(ast: FormatAstView): AssistantMessage {
  const msg = emptyAssistantMessage();
  visitTopDown(ast, msg, (id) => {
    const name = findByTag(ast, id, TAG.TOOL_NAME);
    if (name === -1) return;
    msg.tool_calls.push(makeToolCall(ast.text(name), m3Container(ast, id, true, !ast.isPartial(id))));
  });
  return msg;
}
