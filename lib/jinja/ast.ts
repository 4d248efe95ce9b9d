/**
 * The node shapes of @huggingface/jinja's parser output (its `Program`), typed here because the
 * package does not export its AST types from its entry point. Discriminated by `type`.
 */
export interface Token {
  value: string;
  type: string;
}

export type Node =
  | { type: "Program"; body: Node[] }
  | { type: "If"; test: Node; body: Node[]; alternate: Node[] }
  | { type: "For"; loopvar: Node; iterable: Node; body: Node[]; defaultBlock: Node[] }
  | { type: "Break" }
  | { type: "Continue" }
  | { type: "Set"; assignee: Node; value?: Node; body: Node[] }
  | { type: "Macro"; name: Identifier; args: Node[]; body: Node[] }
  | { type: "Comment"; value: string }
  | { type: "MemberExpression"; object: Node; property: Node; computed: boolean }
  | { type: "CallExpression"; callee: Node; args: Node[] }
  | Identifier
  | { type: "IntegerLiteral"; value: number }
  | { type: "FloatLiteral"; value: number }
  | { type: "StringLiteral"; value: string }
  | { type: "ArrayLiteral"; value: Node[] }
  | { type: "TupleLiteral"; value: Node[] }
  | { type: "ObjectLiteral"; value: Map<Node, Node> }
  | { type: "BinaryExpression"; operator: Token; left: Node; right: Node }
  | { type: "FilterExpression"; operand: Node; filter: Node }
  | { type: "FilterStatement"; filter: Node; body: Node[] }
  | { type: "SelectExpression"; lhs: Node; test: Node }
  | { type: "TestExpression"; operand: Node; negate: boolean; test: Identifier }
  | { type: "UnaryExpression"; operator: Token; argument: Node }
  | { type: "SliceExpression"; start?: Node; stop?: Node; step?: Node }
  | { type: "KeywordArgumentExpression"; key: Identifier; value: Node }
  | { type: "SpreadExpression"; argument: Node }
  | { type: "KeywordSpreadExpression"; argument: Node }
  | { type: "CallStatement"; call: Node; callerArgs: Node[] | null; body: Node[] }
  | { type: "Ternary"; condition: Node; trueExpr: Node; falseExpr: Node };

export interface Identifier {
  type: "Identifier";
  value: string;
}

export type NodeOf<T extends Node["type"]> = Extract<Node, { type: T }>;
