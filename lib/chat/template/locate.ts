/**
 * Where a render error happened, for messages. @huggingface/jinja's AST carries no source
 * positions, so we print the failing expression back and search the source for it; when the text
 * occurs more than once we say so rather than guess.
 */
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

function firstStringLiteral(node: Node): string | undefined {
  if (node.type === "StringLiteral") return node.value;
  if (node.type === "BinaryExpression") return firstStringLiteral(node.left) ?? firstStringLiteral(node.right);
  return undefined;
}

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Regexes that find the node's text in the source, most specific first. */
function patterns(node: Node): RegExp[] {
  switch (node.type) {
    case "CallExpression": {
      if (node.callee.type !== "Identifier" && node.callee.type !== "MemberExpression") return [];
      const name = node.callee.type === "Identifier" ? node.callee.value : describeNode(node.callee.property);
      const lit = node.args[0] ? firstStringLiteral(node.args[0]) : undefined;
      const out: RegExp[] = [];
      if (lit) out.push(new RegExp(`${esc(name)}\\s*\\(\\s*['"]${esc(lit.slice(0, 24))}`, "g"));
      out.push(new RegExp(`\\b${esc(name)}\\s*\\(`, "g"));
      return out;
    }
    case "FilterExpression": {
      const f = node.filter.type === "CallExpression" ? node.filter.callee : node.filter;
      return f.type === "Identifier" ? [new RegExp(`\\|\\s*${esc(f.value)}\\b`, "g")] : [];
    }
    case "MemberExpression":
      if (!node.computed && node.property.type === "Identifier") return [new RegExp(`\\.\\s*${esc(node.property.value)}\\b`, "g")];
      if (node.property.type === "StringLiteral") return [new RegExp(`\\[\\s*['"]${esc(node.property.value)}['"]\\s*\\]`, "g")];
      return [];
    case "Identifier":
      return [new RegExp(`\\b${esc(node.value)}\\b`, "g")];
    case "For":
      return node.loopvar.type === "Identifier" ? [new RegExp(`\\bfor\\s+${esc(node.loopvar.value)}\\s+in\\b`, "g")] : [];
    case "TestExpression":
      return [new RegExp(`\\bis\\s+(not\\s+)?${esc(node.test.value)}\\b`, "g")];
    default:
      return [];
  }
}

function lineCol(source: string, offset: number): string {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset; i++)
    if (source.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  return `line ${line}, column ${offset - last}`;
}

/** "line L, column C" (or "... (first of N places)"), or undefined when the text is not found. */
export function locateNode(source: string, node: Node): string | undefined {
  for (const re of patterns(node)) {
    const hits = [...source.matchAll(re)];
    if (hits.length === 0) continue;
    const at = lineCol(source, hits[0]!.index);
    return hits.length === 1 ? at : `${at} (first of ${hits.length} places)`;
  }
  return undefined;
}

export function snippet(node: Node): string {
  const s = describeNode(node);
  return s.length > MAX ? s.slice(0, MAX) + "…" : s;
}
