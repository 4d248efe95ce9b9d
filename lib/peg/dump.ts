/**
 * One-line description of a parser subtree, in the reference's `common_peg_arena::dump()` format
 * (`Sequence(Literal(a), Repetition(Any, 0, unbounded))`); cycles print as `[cycle]`.
 */
import { type PegNode, type PegNodeId, assertNeverNode } from "./nodes.js";

export function dumpNode(nodes: readonly PegNode[], id: PegNodeId): string {
  return dumpImpl(nodes, id, new Set());
}

function bound(max: number): string {
  return max === -1 ? "unbounded" : String(max);
}

function dumpImpl(nodes: readonly PegNode[], id: PegNodeId, visited: Set<PegNodeId>): string {
  if (visited.has(id)) return "[cycle]";
  visited.add(id);
  const node = nodes[id]!;
  const sub = (c: PegNodeId): string => dumpImpl(nodes, c, visited);
  switch (node.kind) {
    case "epsilon":
      return "Epsilon";
    case "start":
      return "Start";
    case "end":
      return "End";
    case "literal":
      return `Literal(${node.text})`;
    case "sequence":
      return `Sequence(${node.children.map(sub).join(", ")})`;
    case "choice":
      return `Choice(${node.children.map(sub).join(", ")})`;
    case "repetition":
      return `Repetition(${sub(node.child)}, ${node.min}, ${bound(node.max)})`;
    case "and":
      return `And(${sub(node.child)})`;
    case "not":
      return `Not(${sub(node.child)})`;
    case "atomic":
      return `Atomic(${sub(node.child)})`;
    case "gbnf":
      return `Gbnf(${node.grammar}, ${sub(node.child)})`;
    case "ac":
      return `Ac(${node.delimiters.join(" | ")}, ${sub(node.child)})`;
    case "any":
      return "Any";
    case "space":
      return "Space";
    case "chars":
      return `CharRepeat(${node.pattern}, ${node.min}, ${bound(node.max)})`;
    case "string":
      return `String(${node.delimiter})`;
    case "until":
      return `Until(${node.delimiters.join(" | ")})`;
    case "schema":
      return `Schema(${sub(node.child)}, ${node.schema === undefined ? "null" : JSON.stringify(node.schema)})`;
    case "rule":
      return `Rule(${node.name}, ${sub(node.child)})`;
    case "ref":
      return `Ref(${node.name})`;
    case "tag":
      // The reference restarts cycle detection below a tag; kept so dumps compare equal.
      return `Tag(${node.tag}, ${dumpNode(nodes, node.child)})`;
    default:
      return assertNeverNode(node);
  }
}
