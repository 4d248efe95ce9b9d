/**
 * GBNF export of an arena, the same text as the reference's `common_peg_arena::build_grammar()`.
 * Rule naming, de-duplication, literal formatting and schema compilation belong to the grammar builder
 * (`lib/json-schema`); this file only decides what to emit for each node kind.
 */
import { LlamapegError } from "../errors.js";
import { type GrammarBuilder, gbnfFormatLiteral } from "../json-schema/index.js";
import { type PegNode, type PegNodeId, INVALID_NODE_ID, assertNeverNode } from "./nodes.js";
import { AhoCorasick } from "./trie.js";

export interface GbnfArenaView {
  nodes: readonly PegNode[];
  rules: ReadonlyMap<string, PegNodeId>;
  root: PegNodeId;
}

/** Does a schema node emit its child's grammar instead of the schema's? (raw strings and raw enums do) */
function schemaDelegates(node: Extract<PegNode, { kind: "schema" }>): boolean {
  // Only a missing schema delegates; a JSON null given to the builder is compiled as a schema.
  if (node.schema === undefined) return true;
  const schema = node.schema as Record<string, unknown> | null;
  if (schema === null) return false;
  const isObj = typeof schema === "object" && !Array.isArray(schema);
  if (node.raw && isObj && "type" in schema) {
    const t = schema.type;
    if (t === "string") return true;
    // nullable like ["string", "null"]: the first non-null type decides
    if (Array.isArray(t)) {
      for (const x of t) {
        if (typeof x === "string" && x !== "null") return x === "string";
      }
    }
  }
  if (node.raw && isObj && !("type" in schema) && "enum" in schema) return true;
  return false;
}

function hex(c: number, digits: number): string {
  return c.toString(16).toUpperCase().padStart(digits, "0");
}

function escapeClassChar(c: number): string {
  if (c === 0x2d || c === 0x5d || c === 0x5b || c === 0x5c) return "\\" + String.fromCharCode(c);
  if (c === 0x0a) return "\\n";
  if (c === 0x09) return "\\t";
  if (c === 0x0d) return "\\r";
  if (c >= 0x20 && c <= 0x7e) return String.fromCharCode(c);
  if (c <= 0xff) return "\\x" + hex(c, 2);
  if (c <= 0xffff) return "\\u" + hex(c, 4);
  return "\\U" + hex(c, 8);
}

function charClass(chars: readonly number[], negate: boolean): string {
  return (negate ? "[^" : "[") + chars.map(escapeClassChar).join("") + "]";
}

type AcRuleBody = (completing: number[], buckets: Map<number, number[]>, specific: number[], stateName: (s: number) => string) => string;

/** Emits one rule per non-terminal Aho-Corasick state; returns the start state's rule name. */
function acGrammar(builder: GrammarBuilder, prefix: string, strings: readonly string[], body: AcRuleBody): string {
  const ac = new AhoCorasick(strings);
  const stateName = (s: number): string => (s === 0 ? prefix : `${prefix}-${String(s).padStart(2, "0")}`);
  for (let q = 0; q < ac.numStates; q++) {
    if (ac.isTerminal(q)) continue;
    const buckets = new Map<number, number[]>();
    const completing: number[] = [];
    const specific: number[] = [];
    for (const c of ac.alphabet) {
      const d = ac.next(q, c);
      if (ac.isTerminal(d)) {
        completing.push(c);
        specific.push(c);
      } else if (d !== 0) {
        let b = buckets.get(d);
        if (b === undefined) buckets.set(d, (b = []));
        b.push(c);
        specific.push(c);
      }
    }
    const sorted = new Map([...buckets.entries()].sort((a, b) => a[0] - b[0]));
    builder.addRule(stateName(q), body(completing, sorted, specific, stateName));
  }
  // An empty delimiter makes the start state terminal: keep the returned name valid with an empty rule.
  if (ac.isTerminal(0)) builder.addRule(prefix, "|");
  return stateName(0);
}

/** Strings containing none of `strings` (complement of the automaton: every state accepts). */
function excludingGrammar(builder: GrammarBuilder, prefix: string, strings: readonly string[]): string {
  return acGrammar(builder, prefix, strings, (_completing, buckets, specific, name) => {
    let rhs = "|";
    for (const [d, chars] of buckets) rhs += ` ${charClass(chars, false)} ${name(d)} |`;
    rhs += ` ${charClass(specific, true)} ${name(0)}`;
    return rhs;
  });
}

/** Everything up to and including the first occurrence of any of `strings`. */
function includingGrammar(builder: GrammarBuilder, prefix: string, strings: readonly string[]): string {
  return acGrammar(builder, prefix, strings, (completing, buckets, specific, name) => {
    const alts: string[] = [];
    if (completing.length > 0) alts.push(charClass(completing, false));
    for (const [d, chars] of buckets) alts.push(`${charClass(chars, false)} ${name(d)}`);
    alts.push(`${charClass(specific, true)} ${name(0)}`);
    return alts.join(" | ");
  });
}

function repeatSuffix(min: number, max: number): string {
  if (min === 0 && max === 1) return "?";
  if (min === 0 && max === -1) return "*";
  if (min === 1 && max === -1) return "+";
  if (max === -1) return `{${min},}`;
  if (min === max) return min === 1 ? "" : `{${min}}`;
  return `{${min},${max}}`;
}

function getRule(arena: GbnfArenaView, name: string): PegNodeId {
  const id = arena.rules.get(name);
  if (id === undefined) throw new LlamapegError("ERR_PEG_INVALID", `rule not found: ${name}`, { where: `rules/${name}` });
  return id;
}

/** Rule names reachable from `start`, following refs through the rule table. */
function reachableRules(arena: GbnfArenaView, start: PegNodeId): Set<string> {
  const reachable = new Set<string>();
  const visit = (id: PegNodeId): void => {
    const node = arena.nodes[id]!;
    switch (node.kind) {
      case "epsilon":
      case "start":
      case "end":
      case "until":
      case "literal":
      case "chars":
      case "space":
      case "any":
      case "string":
        return;
      case "sequence":
      case "choice":
        for (const c of node.children) visit(c);
        return;
      case "repetition":
      case "and":
      case "not":
      case "tag":
      case "atomic":
      case "gbnf":
      case "ac":
      case "schema":
        visit(node.child);
        return;
      case "rule":
        if (!reachable.has(node.name)) {
          reachable.add(node.name);
          visit(node.child);
        }
        return;
      case "ref":
        visit(getRule(arena, node.name));
        return;
      default:
        assertNeverNode(node);
    }
  };
  visit(start);
  return reachable;
}

/** Writes the arena's grammar into `builder`: reachable rules, then `root` (for `lazy`: the trigger rules). */
export function buildArenaGrammar(arena: GbnfArenaView, builder: GrammarBuilder, lazy = false): void {
  const { nodes } = arena;

  // Tags, atomics and delegating schemas are transparent: parenthesization looks through them.
  const effective = (id: PegNodeId): PegNode => {
    for (;;) {
      const p = nodes[id]!;
      if (p.kind === "tag" || p.kind === "atomic") id = p.child;
      else if (p.kind === "schema" && schemaDelegates(p)) id = p.child;
      else return p;
    }
  };

  // JSON whitespace (json-schema/layout.ts): a `space` between JSON punctuation is written as
  // templates serialize JSON, by its neighbours in the sequence: " " after ":" or ",", nothing
  // after "{" / "[" or before "}" / "]" / ":" / ","; a space between other things (a tool-call
  // marker and the JSON) keeps the flexible rule. The parser reads any whitespace either way.
  const canonical = builder.jsonWhitespace === "canonical";
  const literalOf = (id: PegNodeId | undefined): string | null => {
    if (id === undefined) return null;
    const p = effective(id);
    return p.kind === "literal" ? p.text : null;
  };
  const canonicalSpace = (children: readonly PegNodeId[], i: number): string => {
    const before = literalOf(children[i - 1]);
    const after = literalOf(children[i + 1]);
    if (before !== null && (before.endsWith(":") || before.endsWith(","))) return '" "';
    if ((before !== null && (before.endsWith("{") || before.endsWith("["))) || (after !== null && /^[}\]:,]/.test(after))) return "";
    return "space";
  };

  const toGbnf = (id: PegNodeId): string => {
    const node = nodes[id]!;
    switch (node.kind) {
      case "epsilon":
      case "start":
      case "end":
      case "and":
      case "not": // lookahead has no GBNF form
        return "";
      case "literal":
        return gbnfFormatLiteral(node.text);
      case "sequence": {
        let s = "";
        for (const [i, c] of node.children.entries()) {
          const g = canonical && nodes[c]!.kind === "space" ? canonicalSpace(node.children, i) : toGbnf(c);
          if (g === "") continue;
          if (s !== "") s += " ";
          const k = effective(c).kind;
          s += k === "choice" || k === "sequence" ? `(${g})` : g;
        }
        return s;
      }
      case "choice": {
        let s = "";
        for (const c of node.children) {
          if (s !== "") s += " | ";
          const g = toGbnf(c);
          s += effective(c).kind === "choice" ? `(${g})` : g;
        }
        return s;
      }
      case "repetition": {
        let g = toGbnf(node.child);
        const k = effective(node.child).kind;
        if (k === "choice" || k === "sequence") g = `(${g})`;
        return g + repeatSuffix(node.min, node.max);
      }
      case "any":
        return ".";
      case "space":
        return "space";
      case "chars":
        return node.pattern + repeatSuffix(node.min, node.max);
      case "string": {
        const d = node.delimiter;
        return `( [^${d}\\\\] | "\\\\" ( [${d}\\\\/ bfnrt] | "u" [0-9a-fA-F]{4} ) )*`;
      }
      case "until":
        return node.delimiters.length === 0 ? ".*" : excludingGrammar(builder, `until-${id}`, node.delimiters);
      case "schema":
        return schemaDelegates(node) ? toGbnf(node.child) : builder.addSchema(node.name, node.schema);
      case "rule":
      case "ref":
        return node.name;
      case "tag":
      case "atomic":
        return toGbnf(node.child);
      case "gbnf":
        return node.grammar;
      case "ac":
        return includingGrammar(builder, `ac-${id}`, node.delimiters);
      default:
        return assertNeverNode(node);
    }
  };

  let reachable: Set<string>;
  const triggers: string[] = [];
  if (lazy) {
    reachable = new Set();
    for (const [name, id] of arena.rules) {
      const p = nodes[id]!;
      if (p.kind === "rule" && p.trigger) {
        reachable.add(name);
        for (const r of reachableRules(arena, id)) reachable.add(r);
        triggers.push(p.name);
      }
    }
  } else {
    reachable = arena.root === INVALID_NODE_ID ? new Set() : reachableRules(arena, arena.root);
  }

  for (const [name, id] of arena.rules) {
    if (!reachable.has(name)) continue;
    const p = nodes[id]!;
    if (p.kind === "rule") {
      const body = toGbnf(p.child);
      builder.addRule(p.name, body);
    }
  }

  if (lazy) {
    triggers.sort(byteOrder);
    builder.addRule("root", triggers.join(" | "));
  } else if (arena.root !== INVALID_NODE_ID) {
    builder.addRule("root", toGbnf(arena.root));
  }
}

/** std::string ordering (bytes), which for rule names ([a-zA-Z0-9-]) is plain code unit order. */
function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
