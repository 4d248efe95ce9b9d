/**
 * PEG parser nodes: a discriminated union stored in one array (the arena) and addressed by integer id.
 * Kinds and fields follow llama.cpp's `common_peg_*_parser` structs one to one, so an arena
 * serializes to the same JSON as `common_peg_arena::to_json()`.
 */
import { internalError } from "../errors.js";
import { utf8Encode } from "./utf8.js";

export type PegNodeId = number;

/** Inclusive code point range of a character class. */
export interface CharRange {
  start: number;
  end: number;
}

export type PegNode =
  /** S -> ε */
  | { kind: "epsilon" }
  /** S -> ^ (position 0) */
  | { kind: "start" }
  /** S -> $ */
  | { kind: "end" }
  /** S -> "text" */
  | { kind: "literal"; text: string }
  /** S -> A B C */
  | { kind: "sequence"; children: PegNodeId[] }
  /** S -> A | B | C (ordered) */
  | { kind: "choice"; children: PegNodeId[] }
  /** S -> A{min,max}; max -1 = unbounded */
  | { kind: "repetition"; child: PegNodeId; min: number; max: number }
  /** S -> &A */
  | { kind: "and"; child: PegNodeId }
  /** S -> !A */
  | { kind: "not"; child: PegNodeId }
  /** S -> . (one UTF-8 character) */
  | { kind: "any" }
  /** S -> [ \t\n\v\f\r]* */
  | { kind: "space" }
  /** S -> [class]{min,max} */
  | { kind: "chars"; pattern: string; ranges: CharRange[]; negated: boolean; min: number; max: number }
  /** JSON-style string content up to (not including) `delimiter`, escapes allowed */
  | { kind: "string"; delimiter: string }
  /** S -> (!delim .)* for any of `delimiters` */
  | { kind: "until"; delimiters: string[] }
  /**
   * child, exported to GBNF through a JSON schema. `schema: undefined` = no schema (what a JSON
   * `null` loads as; the GBNF then is the child's), while a builder-given `null` is a schema value,
   * as in the reference (a pointer to a JSON null vs no pointer).
   */
  | { kind: "schema"; child: PegNodeId; name: string; schema: unknown; raw: boolean }
  /** named rule; creates an AST node */
  | { kind: "rule"; name: string; child: PegNodeId; trigger: boolean }
  /** reference to a named rule (resolved to the rule's id when the builder finishes) */
  | { kind: "ref"; name: string }
  /** child; drops its AST nodes when the child needs more input */
  | { kind: "atomic"; child: PegNodeId }
  /** child; creates an AST node carrying `tag` */
  | { kind: "tag"; child: PegNodeId; tag: string }
  /** child for parsing, `grammar` verbatim for GBNF */
  | { kind: "gbnf"; child: PegNodeId; grammar: string }
  /** child for parsing, an Aho-Corasick "up to and including the first delimiter" grammar for GBNF */
  | { kind: "ac"; child: PegNodeId; delimiters: string[] };

export type PegNodeKind = PegNode["kind"];
export type PegNodeOf<K extends PegNodeKind> = Extract<PegNode, { kind: K }>;

/** Marks "no root" (the reference's `COMMON_PEG_INVALID_PARSER_ID`). */
export const INVALID_NODE_ID = -1;

/** Rule names are cleaned like the reference: every run of characters outside [a-zA-Z0-9-] becomes "-". */
export function cleanRuleName(name: string): string {
  return name.replace(/[^a-zA-Z0-9-]+/g, "-");
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function parseHex(b: Uint8Array, pos: number, count: number): number {
  if (pos + count > b.length) return -1;
  let v = 0;
  for (let i = 0; i < count; i++) {
    const h = hexValue(b[pos + i]!);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/** One class member at `pos`: [codepoint, bytes used]. Escapes as the reference: \xHH \uHHHH \UHHHHHHHH \n \t \r \\ \] \[ and \c = c. */
function classChar(b: Uint8Array, pos: number): [number, number] {
  if (b[pos] === 0x5c && pos + 1 < b.length) {
    const c = b[pos + 1]!;
    switch (c) {
      case 0x78 /* x */:
      case 0x75 /* u */:
      case 0x55 /* U */: {
        const count = c === 0x78 ? 2 : c === 0x75 ? 4 : 8;
        const v = parseHex(b, pos + 2, count);
        return v >= 0 ? [v, 2 + count] : [c, 2];
      }
      case 0x6e:
        return [0x0a, 2];
      case 0x74:
        return [0x09, 2];
      case 0x72:
        return [0x0d, 2];
      default:
        return [c, 2];
    }
  }
  // Bytes, not code points: the reference reads the pattern byte by byte, so a raw non-ASCII character
  // in a class becomes one range per UTF-8 byte. Kept for parity (write \uXXXX for non-ASCII).
  return [b[pos]!, 1];
}

/** Parses a character class like `[a-z0-9_]`, `^abc` or `[\u4E00-\u9FFF]` into ranges, as the reference does. */
export function parseCharClass(classes: string): { ranges: CharRange[]; negated: boolean } {
  let b = utf8Encode(classes);
  if (b.length > 0 && b[0] === 0x5b) b = b.subarray(1);
  if (b.length > 0 && b[b.length - 1] === 0x5d) b = b.subarray(0, b.length - 1);
  let negated = false;
  if (b.length > 0 && b[0] === 0x5e) {
    negated = true;
    b = b.subarray(1);
  }
  const ranges: CharRange[] = [];
  let i = 0;
  while (i < b.length) {
    const [start, startLen] = classChar(b, i);
    i += startLen;
    if (i + 1 < b.length && b[i] === 0x2d) {
      const [end, endLen] = classChar(b, i + 1);
      ranges.push({ start, end });
      i += 1 + endLen;
    } else {
      ranges.push({ start, end: start });
    }
  }
  return { ranges, negated };
}

/** Ids of the nodes a node points to (rules included, refs excluded). */
export function childIds(node: PegNode): PegNodeId[] {
  switch (node.kind) {
    case "sequence":
    case "choice":
      return node.children;
    case "repetition":
    case "and":
    case "not":
    case "schema":
    case "rule":
    case "atomic":
    case "tag":
    case "gbnf":
    case "ac":
      return [node.child];
    case "epsilon":
    case "start":
    case "end":
    case "literal":
    case "any":
    case "space":
    case "chars":
    case "string":
    case "until":
    case "ref":
      return [];
    default:
      return assertNeverNode(node);
  }
}

export function assertNeverNode(node: never): never {
  throw internalError(`unknown PEG node kind: ${JSON.stringify(node)}`);
}
