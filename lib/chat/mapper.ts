/**
 * Tagged AST -> assistant message: the reader half of the chat grammars (the builders in
 * `grammar/` put the tags on; this takes them off). Behaves like llama.cpp's `common_chat_peg_mapper`.
 *
 * Nodes are visited depth first, parent before children. Tool calls follow a small state machine:
 * `tool-open` starts a pending call; `tool-name` names it and makes it visible (so a stream can show
 * it early); argument text written before the name is held in a buffer; tagged arguments are
 * assembled into a JSON object (names quoted, string-typed values quoted and escaped, other values
 * normalized from Python style); `tool-close` closes a dangling string quote and unbalanced braces.
 * On partial input, the arguments written so far are a prefix of the final JSON text.
 *
 * The state machine (`MapperCore`) is shared with the streaming mapper (stream-mapper.ts), which runs
 * it over only the part of each streamed AST that changed, on fields that remember their segments.
 */
import { TAG } from "./tags.js";
import { emptyAssistantMessage, type AssistantMessage, type ToolCall } from "./messages.js";
import { escapeJsonStringInner, jsonBraceDepth, pythonToJson, trimArgName, trimTrailingSpace } from "./normalize.js";
import { Field, type Piece, TF_JSON_ESCAPE, TF_PLAIN, TF_TRIM_END, type Transform, literalPiece } from "./text-fields.js";

/** What the mapper needs from an AST node. */
export interface MapperNode {
  readonly tag: string;
  readonly children: readonly number[];
}

/** What the mapper needs from a parse: the node arena, the top-level node ids, and node text. */
export interface MapperAst<N extends MapperNode = MapperNode> {
  node(id: number): N;
  readonly roots: readonly number[];
  text(node: N): string;
}

/** How the core reads a node's text. */
export interface NodeReader<N> {
  /** Decoded text (short values: ids, names, argument names, raw values). */
  text(node: N): string;
  /** Decoded text under `tf`, as a piece of a field. */
  piece(node: N, tf: Transform): Piece;
}

/** One tool call while mapping. */
export interface CallState {
  id: string;
  name: string;
  args: Field;
}

/** The tags the core acts on; every other tag (tool, tool-arg, reasoning-block, foreign ones) is structure only. */
export const MAPPED_TAGS: ReadonlySet<string> = new Set([
  TAG.REASONING,
  TAG.CONTENT,
  TAG.TOOL_OPEN,
  TAG.TOOL_ID,
  TAG.TOOL_NAME,
  TAG.TOOL_ARGS,
  TAG.TOOL_ARG_OPEN,
  TAG.TOOL_ARG_NAME,
  TAG.TOOL_ARG_VALUE,
  TAG.TOOL_ARG_STRING_VALUE,
  TAG.TOOL_ARG_CLOSE,
  TAG.TOOL_CLOSE,
]);

/** The mapper's state machine over tagged nodes in document order. */
export class MapperCore<N> {
  reasoning: Field;
  content: Field;
  /** visible calls, in order */
  calls: CallState[] = [];
  pending: CallState | null = null;
  current: CallState | null = null;
  argCount = 0;
  quotePending = false;
  argsBuffer: Field;

  constructor(
    readonly reader: NodeReader<N>,
    readonly tracked: boolean,
  ) {
    this.reasoning = new Field(tracked);
    this.content = new Field(tracked);
    this.argsBuffer = new Field(tracked);
  }

  private lit(s: string): Piece {
    return literalPiece(s, this.tracked);
  }

  private appendArgs(p: Piece): void {
    const c = this.current;
    if (c !== null && c.name !== "") c.args.append(p);
    else this.argsBuffer.append(p);
  }

  private setArgs(p: Piece): void {
    const c = this.current;
    if (c !== null && c.name !== "") c.args.set(p);
    else this.argsBuffer.set(p);
  }

  private argsTargetEmpty(): boolean {
    const c = this.current;
    return c !== null && c.name !== "" ? c.args.str === "" : this.argsBuffer.str === "";
  }

  map(tag: string, node: N): void {
    switch (tag) {
      case TAG.REASONING:
        // Several reasoning blocks (e.g. GPT-OSS channels) are concatenated.
        this.reasoning.append(this.reader.piece(node, TF_PLAIN));
        return;
      case TAG.CONTENT:
        this.content.append(this.reader.piece(node, TF_PLAIN));
        return;
      case TAG.TOOL_OPEN:
        this.pending = { id: "", name: "", args: new Field(this.tracked) };
        this.current = this.pending;
        this.argCount = 0;
        this.argsBuffer.clear();
        this.quotePending = false;
        return;
      case TAG.TOOL_ID: {
        if (this.current === null) return;
        let text = trimTrailingSpace(this.reader.text(node));
        if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1);
        this.current.id = text;
        return;
      }
      case TAG.TOOL_NAME: {
        const c = this.current;
        if (c === null) return;
        c.name = trimTrailingSpace(this.reader.text(node));
        if (this.argsBuffer.str !== "") {
          c.args.copy(this.argsBuffer);
          this.argsBuffer.clear();
        } else if (c.args.str === "") {
          c.args.set(this.lit("{"));
        }
        if (this.pending !== null) {
          this.calls.push(this.pending);
          this.pending = null;
        }
        return;
      }
      case TAG.TOOL_ARGS: {
        if (this.current === null) return;
        // JSON arguments arrive whole; tagged ones are built from tool-arg-* nodes instead.
        const p = this.reader.piece(node, TF_TRIM_END);
        if (p.first === 0x7b) this.setArgs(p);
        return;
      }
      case TAG.TOOL_ARG_OPEN:
        this.quotePending = false;
        return;
      case TAG.TOOL_ARG_NAME: {
        if (this.current === null) return;
        let entry = this.argCount > 0 ? "," : "";
        entry += JSON.stringify(trimArgName(this.reader.text(node))) + ":";
        this.argCount++;
        if (this.argsTargetEmpty()) this.setArgs(this.lit("{"));
        this.appendArgs(this.lit(entry));
        return;
      }
      case TAG.TOOL_ARG_STRING_VALUE: {
        if (this.current === null) return;
        const p = this.reader.piece(node, TF_JSON_ESCAPE);
        // Quote opened once (an empty value always opens one, as the reference does); the matching
        // close comes with tool-arg-close (or tool-close).
        if (p.text === "" || !this.quotePending) {
          this.appendArgs(this.lit('"'));
          this.quotePending = true;
        }
        this.appendArgs(p);
        return;
      }
      case TAG.TOOL_ARG_VALUE: {
        if (this.current === null) return;
        const text = this.reader.text(node);
        if (text !== "") this.appendArgs(this.lit(pythonToJson(text)));
        return;
      }
      case TAG.TOOL_ARG_CLOSE:
        if (this.current !== null && this.quotePending) {
          this.appendArgs(this.lit('"'));
          this.quotePending = false;
        }
        return;
      case TAG.TOOL_CLOSE: {
        const c = this.current;
        if (c === null) return;
        if (c.name === "" && this.argsBuffer.str !== "") {
          c.args.copy(this.argsBuffer);
          this.argsBuffer.clear();
        }
        if (this.quotePending) {
          c.args.append(this.lit('"'));
          this.quotePending = false;
        }
        const depth = jsonBraceDepth(c.args.str);
        if (depth > 0) c.args.append(this.lit("}".repeat(depth)));
        if (this.pending !== null) {
          // A call that never got a name is dropped.
          if (c.name !== "") this.calls.push(this.pending);
          this.pending = null;
        }
        return;
      }
      default:
        // Structural tags (reasoning-block, tool, tool-arg) and foreign tags carry no text of their own.
        return;
    }
  }

  /** Ends the walk: a named pending call becomes visible, whitespace-only reasoning is dropped. */
  flush(): void {
    const p = this.pending;
    if (p !== null && p.name !== "") {
      if (this.argsBuffer.str !== "") p.args.copy(this.argsBuffer);
      if (this.quotePending && p.args.str !== "") p.args.append(this.lit('"'));
      this.calls.push(p);
      this.pending = null;
    }
    // Whitespace-only reasoning (e.g. an empty <think></think> prefill) is no reasoning.
    const r = this.reasoning;
    if (r.str !== "" && !(this.tracked ? r.nonBlank : isNonBlank(r.str))) r.clear();
  }

  message(): AssistantMessage {
    const msg = emptyAssistantMessage();
    msg.reasoning_content = this.reasoning.str;
    msg.content = this.content.str;
    for (const c of this.calls) msg.tool_calls.push(toolCall(c));
    return msg;
  }
}

export function toolCall(c: CallState): ToolCall {
  return { id: c.id, type: "function", function: { name: c.name, arguments: c.args.str } };
}

function isNonBlank(r: string): boolean {
  for (let i = 0; i < r.length; i++) {
    const ch = r[i];
    if (!(ch === " " || ch === "\n" || ch === "\r" || ch === "\t")) return true;
  }
  return false;
}

function textPiece(text: string): Piece {
  return { text, seg: null, first: text.length > 0 ? text.charCodeAt(0) : -1, nonBlank: false };
}

/** Maps a tagged AST to an assistant message. */
export function mapChatAst<N extends MapperNode>(ast: MapperAst<N>): AssistantMessage {
  const core = new MapperCore<N>(
    {
      text: (node) => ast.text(node),
      piece: (node, tf) => {
        const text = ast.text(node);
        return textPiece(tf === TF_TRIM_END ? trimTrailingSpace(text) : tf === TF_JSON_ESCAPE ? escapeJsonStringInner(text) : text);
      },
    },
    false,
  );
  // Iterative DFS (parent first, children in order): deep JSON must not overflow the stack.
  const stack: number[] = [];
  for (let i = ast.roots.length - 1; i >= 0; i--) stack.push(ast.roots[i]!);
  while (stack.length > 0) {
    const node = ast.node(stack.pop()!);
    if (node.tag !== "") core.map(node.tag, node);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  core.flush();
  return core.message();
}
