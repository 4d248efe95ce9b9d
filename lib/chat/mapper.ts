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
 */
import { TAG } from "./tags.js";
import { emptyAssistantMessage, makeToolCall, type AssistantMessage, type ToolCall } from "./messages.js";
import { escapeJsonStringInner, jsonBraceDepth, pythonToJson, trimArgName, trimTrailingSpace } from "./normalize.js";

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

class ChatMapper<N extends MapperNode> {
  readonly msg: AssistantMessage = emptyAssistantMessage();
  private pending: ToolCall | null = null;
  private current: ToolCall | null = null;
  private argCount = 0;
  private quotePending = false;
  private argsBuffer = "";

  constructor(private readonly ast: MapperAst<N>) {}

  run(): AssistantMessage {
    // Iterative DFS (parent first, children in order): deep JSON must not overflow the stack.
    const stack: number[] = [];
    for (let i = this.ast.roots.length - 1; i >= 0; i--) stack.push(this.ast.roots[i]!);
    while (stack.length > 0) {
      const node = this.ast.node(stack.pop()!);
      if (node.tag !== "") this.map(node);
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
    }
    this.flush();
    return this.msg;
  }

  private appendArgs(s: string): void {
    const c = this.current;
    if (c !== null && c.function.name !== "") c.function.arguments += s;
    else this.argsBuffer += s;
  }

  private setArgs(s: string): void {
    const c = this.current;
    if (c !== null && c.function.name !== "") c.function.arguments = s;
    else this.argsBuffer = s;
  }

  private argsTargetEmpty(): boolean {
    const c = this.current;
    return c !== null && c.function.name !== "" ? c.function.arguments === "" : this.argsBuffer === "";
  }

  private map(node: N): void {
    const msg = this.msg;
    switch (node.tag) {
      case TAG.REASONING:
        // Several reasoning blocks (e.g. GPT-OSS channels) are concatenated.
        msg.reasoning_content += this.ast.text(node);
        return;
      case TAG.CONTENT:
        msg.content += this.ast.text(node);
        return;
      case TAG.TOOL_OPEN:
        this.pending = makeToolCall("", "");
        this.current = this.pending;
        this.argCount = 0;
        this.argsBuffer = "";
        this.quotePending = false;
        return;
      case TAG.TOOL_ID: {
        if (this.current === null) return;
        let text = trimTrailingSpace(this.ast.text(node));
        if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1);
        this.current.id = text;
        return;
      }
      case TAG.TOOL_NAME: {
        const c = this.current;
        if (c === null) return;
        c.function.name = trimTrailingSpace(this.ast.text(node));
        if (this.argsBuffer !== "") {
          c.function.arguments = this.argsBuffer;
          this.argsBuffer = "";
        } else if (c.function.arguments === "") {
          c.function.arguments = "{";
        }
        if (this.pending !== null) {
          msg.tool_calls.push(this.pending);
          this.pending = null;
        }
        return;
      }
      case TAG.TOOL_ARGS: {
        if (this.current === null) return;
        // JSON arguments arrive whole; tagged ones are built from tool-arg-* nodes instead.
        const text = trimTrailingSpace(this.ast.text(node));
        if (text.startsWith("{")) this.setArgs(text);
        return;
      }
      case TAG.TOOL_ARG_OPEN:
        this.quotePending = false;
        return;
      case TAG.TOOL_ARG_NAME: {
        if (this.current === null) return;
        let entry = this.argCount > 0 ? "," : "";
        entry += JSON.stringify(trimArgName(this.ast.text(node))) + ":";
        this.argCount++;
        if (this.argsTargetEmpty()) this.setArgs("{");
        this.appendArgs(entry);
        return;
      }
      case TAG.TOOL_ARG_VALUE:
      case TAG.TOOL_ARG_STRING_VALUE: {
        if (this.current === null) return;
        const text = this.ast.text(node);
        let add = "";
        if (node.tag === TAG.TOOL_ARG_STRING_VALUE) {
          // Quote opened once (an empty value always opens one, as the reference does); the
          // matching close comes with tool-arg-close (or tool-close).
          if (text === "" || !this.quotePending) {
            add = '"';
            this.quotePending = true;
          }
          add += escapeJsonStringInner(text);
        } else if (text !== "") {
          add = pythonToJson(text);
        }
        this.appendArgs(add);
        return;
      }
      case TAG.TOOL_ARG_CLOSE:
        if (this.current !== null && this.quotePending) {
          this.appendArgs('"');
          this.quotePending = false;
        }
        return;
      case TAG.TOOL_CLOSE: {
        const c = this.current;
        if (c === null) return;
        if (c.function.name === "" && this.argsBuffer !== "") {
          c.function.arguments = this.argsBuffer;
          this.argsBuffer = "";
        }
        if (this.quotePending) {
          c.function.arguments += '"';
          this.quotePending = false;
        }
        for (let d = jsonBraceDepth(c.function.arguments); d > 0; d--) c.function.arguments += "}";
        if (this.pending !== null) {
          // A call that never got a name is dropped.
          if (c.function.name !== "") msg.tool_calls.push(this.pending);
          this.pending = null;
        }
        return;
      }
      default:
        // Structural tags (reasoning-block, tool, tool-arg) and foreign tags carry no text of their own.
        return;
    }
  }

  private flush(): void {
    const p = this.pending;
    if (p !== null && p.function.name !== "") {
      if (this.argsBuffer !== "") p.function.arguments = this.argsBuffer;
      if (this.quotePending && p.function.arguments !== "") p.function.arguments += '"';
      this.msg.tool_calls.push(p);
      this.pending = null;
    }
    // Whitespace-only reasoning (e.g. an empty <think></think> prefill) is no reasoning.
    const r = this.msg.reasoning_content;
    if (r !== "") {
      let blank = true;
      for (let i = 0; i < r.length && blank; i++) {
        const ch = r[i];
        blank = ch === " " || ch === "\n" || ch === "\r" || ch === "\t";
      }
      if (blank) this.msg.reasoning_content = "";
    }
  }
}

/** Maps a tagged AST to an assistant message. */
export function mapChatAst<N extends MapperNode>(ast: MapperAst<N>): AssistantMessage {
  return new ChatMapper(ast).run();
}
