/**
 * Source positions for the nodes of a parsed template. The library's parser builds nodes without
 * positions, but it consumes tokens strictly left to right and every leaf (identifier, literal,
 * text) comes from one token, so walking the tree in source order and matching each leaf with the
 * next token of the same kind and value recovers where every node is. Operator tokens are the
 * lexer's own objects inside Binary/Unary nodes, so they anchor the walk as it goes. A statement
 * is at its keyword (`for`, `if`, `set`...), an operation at its operator or name (`a + b` at
 * `+`, `x | f` at `f`, `x.y` at `y`), anything else where it starts.
 */
import type { Node } from "./ast.js";
import type { PositionedToken } from "./lexer.js";

export type NodePositions = WeakMap<object, number>;

/** Statement node type -> its keyword. */
const KEYWORD: Partial<Record<Node["type"], string>> = {
  If: "if",
  For: "for",
  Set: "set",
  Macro: "macro",
  CallStatement: "call",
  FilterStatement: "filter",
  Break: "break",
  Continue: "continue",
};

/** Nodes positioned at one of their parts (an index into `parts`): the operator, filter, test or member name. */
const ANCHOR: Partial<Record<Node["type"], number>> = {
  BinaryExpression: 1,
  UnaryExpression: 0,
  FilterExpression: 1,
  TestExpression: 1,
  MemberExpression: 1,
  SelectExpression: 1,
};

/** A child node, or the operator token between children (`{op}`). */
type Part = Node | { op: unknown } | undefined | null;

/** What a node is made of, in source order: child nodes and the operator token between them. */
function parts(node: Node): Part[] {
  switch (node.type) {
    case "Program":
      return node.body;
    case "If":
      return [node.test, ...node.body, ...node.alternate];
    case "For":
      return [node.loopvar, node.iterable, ...node.body, ...node.defaultBlock];
    case "Set":
      return [node.assignee, node.value, ...node.body];
    case "Macro":
      return [node.name, ...node.args, ...node.body];
    case "CallStatement":
      // `{% call(args) macro(x) %}`: caller parameters come first in the source
      return [...(node.callerArgs ?? []), node.call, ...node.body];
    case "FilterStatement":
      return [node.filter, ...node.body];
    case "MemberExpression":
      return [node.object, node.property];
    case "CallExpression":
      return [node.callee, ...node.args];
    case "ArrayLiteral":
    case "TupleLiteral":
      return node.value;
    case "ObjectLiteral": {
      const out: Node[] = [];
      for (const [k, v] of node.value) out.push(k, v);
      return out;
    }
    case "BinaryExpression":
      return [node.left, { op: node.operator }, node.right];
    case "UnaryExpression":
      return [{ op: node.operator }, node.argument];
    case "FilterExpression":
      return [node.operand, node.filter];
    case "SelectExpression":
      return [node.lhs, node.test];
    case "TestExpression":
      return [node.operand, node.test];
    case "SliceExpression":
      return [node.start, node.stop, node.step];
    case "KeywordArgumentExpression":
      return [node.key, node.value];
    case "SpreadExpression":
    case "KeywordSpreadExpression":
      return [node.argument];
    case "Ternary":
      // `a if cond else b`: the true branch comes first in the source
      return [node.trueExpr, node.condition, node.falseExpr];
    default:
      return [];
  }
}

interface Frame {
  node: Node;
  parts: Part[];
  next: number;
  start: number | undefined;
}

/**
 * Positions of every node whose first token was found. Iterative (an explicit stack), so a
 * pathologically deep tree costs memory, not the JS stack; the evaluator's nesting limit then
 * rejects it at run time with this position.
 */
export function nodePositions(program: Node, tokens: readonly PositionedToken[]): NodePositions {
  const pos: NodePositions = new WeakMap();
  let cursor = 0;

  /** Finds the next token matching `test` from the cursor; moves the cursor past it. */
  const take = (test: (t: PositionedToken) => boolean): PositionedToken | undefined => {
    for (let i = cursor; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (test(t)) {
        cursor = i + 1;
        return t;
      }
    }
    return undefined;
  };
  /** The operator tokens inside nodes are the lexer's objects, except the parser's own "not in". */
  const tokenOf = (op: unknown): PositionedToken | undefined => {
    const t = op as PositionedToken;
    return typeof t === "object" && t !== null && tokens[t.index] === t ? t : undefined;
  };

  /** Matches a leaf or a statement keyword; the start it gives, if any. */
  const own = (node: Node): number | undefined => {
    const kw = KEYWORD[node.type];
    if (kw !== undefined) {
      // an `elif` is an If node in the alternate of its parent
      return take((t) => t.type === "Identifier" && (t.value === kw || (kw === "if" && t.value === "elif")))?.start;
    }
    switch (node.type) {
      case "Identifier": {
        const value = node.value;
        return take((t) => t.type === "Identifier" && t.value === value)?.start;
      }
      case "IntegerLiteral":
      case "FloatLiteral": {
        const value = node.value;
        return take((t) => t.type === "NumericLiteral" && Number(t.value) === value)?.start;
      }
      case "StringLiteral": {
        const value = node.value;
        const t = take((t) => (t.type === "Text" && t.value === value) || (t.type === "StringLiteral" && value.startsWith(t.value)));
        // adjacent string literals are one node: step over the rest of them
        if (t?.type === "StringLiteral") {
          let got = t.value;
          while (got.length < value.length && tokens[cursor]?.type === "StringLiteral") got += tokens[cursor++]!.value;
        }
        return t?.start;
      }
      case "Comment": {
        const value = node.value;
        return take((t) => t.type === "Comment" && t.value === value)?.start;
      }
      // literals start at their bracket (an empty one has nothing else to be found by)
      case "ArrayLiteral":
        return take((t) => t.type === "OpenSquareBracket")?.start;
      case "ObjectLiteral":
        return take((t) => t.type === "OpenCurlyBracket")?.start;
      default:
        return undefined;
    }
  };

  const open = (node: Node): Frame => ({ node, parts: parts(node), next: 0, start: own(node) });
  const stack: Frame[] = [open(program)];
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.next < f.parts.length) {
      const p = f.parts[f.next++];
      if (p === undefined || p === null) continue;
      if ("op" in p) {
        const t = tokenOf(p.op);
        if (t) cursor = Math.max(cursor, t.index + 1);
      } else stack.push(open(p));
      continue;
    }
    stack.pop();
    // an operation is where its operator or name is (`x | f`: at f); anything else starts where
    // its first part does
    const a = ANCHOR[f.node.type];
    if (f.start === undefined && a !== undefined) {
      const p = f.parts[a];
      if (p !== undefined && p !== null) f.start = "op" in p ? tokenOf(p.op)?.start : pos.get(p);
    }
    for (let i = 0; f.start === undefined && i < f.parts.length; i++) {
      const p = f.parts[i];
      if (p === undefined || p === null) continue;
      f.start = "op" in p ? tokenOf(p.op)?.start : pos.get(p);
    }
    if (f.start !== undefined) pos.set(f.node, f.start);
  }
  return pos;
}
