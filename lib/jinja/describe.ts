/** A failing expression printed back for error messages (its position comes from positions.ts). */
import type { Node } from "./ast.js";

const MAX = 60;

/** A short Jinja-like rendering of an expression node. */
export function describeNode(node: Node, depth = 0): string {
  if (depth > 4) return "…";
  const d = (n: Node): string => describeNode(n, depth + 1);
  switch (node.type) {
    case "Identifier":
      return node.value;
    case "StringLiteral":
      return JSON.stringify(node.value.length > 30 ? node.value.slice(0, 30) + "…" : node.value);
    case "IntegerLiteral":
    case "FloatLiteral":
      return String(node.value);
    case "MemberExpression":
      return node.computed ? `${d(node.object)}[${d(node.property)}]` : `${d(node.object)}.${d(node.property)}`;
    case "CallExpression":
      return `${d(node.callee)}(${node.args.map(d).join(", ")})`;
    case "FilterExpression":
      return `${d(node.operand)} | ${d(node.filter)}`;
    case "TestExpression":
      return `${d(node.operand)} is ${node.negate ? "not " : ""}${node.test.value}`;
    case "BinaryExpression":
      return `${d(node.left)} ${node.operator.value} ${d(node.right)}`;
    case "UnaryExpression":
      return `${node.operator.value} ${d(node.argument)}`;
    case "KeywordArgumentExpression":
      return `${node.key.value}=${d(node.value)}`;
    case "For":
      return `for ${d(node.loopvar)} in ${d(node.iterable)}`;
    case "If":
      return `if ${d(node.test)}`;
    case "TupleLiteral":
    case "ArrayLiteral":
      return `[${node.value.map(d).join(", ")}]`;
    default:
      return node.type;
  }
}

export function snippet(node: Node): string {
  const s = describeNode(node);
  return s.length > MAX ? s.slice(0, MAX) + "…" : s;
}
