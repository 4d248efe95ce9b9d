/**
 * The builder DSL: the combinators of llama.cpp's `common_peg_parser_builder` as camelCase methods,
 * and its `common_peg_parser` operators (`+`, `|`, `<<`) as methods on the returned handles.
 *
 * Node creation order matters (ids appear in the serialized arena), so every helper creates its nodes
 * in the same order as the reference; two builders making the same calls produce identical arenas.
 *
 * ```ts
 * const arena = buildPegParser((p) =>
 *   p.literal("<tool_call>").then(p.json()).then("</tool_call>"));
 * arena.parse('<tool_call>{"a": 1}</tool_call>').type; // "success"
 * ```
 */
import { LlamapegError } from "../errors.js";
import { PegArena } from "./arena.js";
import { type PegNode, type PegNodeId, INVALID_NODE_ID, cleanRuleName, parseCharClass } from "./nodes.js";

/** A parser under construction: a node id plus the builder that owns it (the reference's `common_peg_parser`). */
export class PegParser {
  readonly id: PegNodeId;
  readonly builder: PegBuilder;

  constructor(id: PegNodeId, builder: PegBuilder) {
    this.id = id;
    this.builder = builder;
  }

  /**
   * Sequence: this, then `other` (a string is a literal). C++ `a + b`.
   *   S -> A B
   */
  then(other: PegParser | string): PegParser {
    const b = this.builder;
    return b.sequence([this, typeof other === "string" ? b.literal(other) : other]);
  }

  /**
   * Ordered choice: this, else `other` (a string is a literal). C++ `a | b`.
   *   S -> A | B
   */
  or(other: PegParser | string): PegParser {
    const b = this.builder;
    return b.choice([this, typeof other === "string" ? b.literal(other) : other]);
  }

  /**
   * Sequence with optional whitespace between: this, `space()`, `other`. C++ `a << b`.
   *   S -> A [ \t\n]* B
   */
  spaced(other: PegParser | string): PegParser {
    const b = this.builder;
    const rhs = typeof other === "string" ? b.literal(other) : other;
    const ws = b.space();
    return b.sequence([this, ws, rhs]);
  }
}

type PegInput = PegParser | PegNodeId;

function idOf(p: PegInput): PegNodeId {
  return typeof p === "number" ? p : p.id;
}

export class PegBuilder {
  private readonly nodes: PegNode[] = [];
  private readonly rules = new Map<string, PegNodeId>();
  private root: PegNodeId = INVALID_NODE_ID;

  /** Wraps an existing node id in a handle. */
  wrap(id: PegNodeId): PegParser {
    return new PegParser(id, this);
  }

  /** Adds a raw node (escape hatch for helpers built outside this class). */
  add(node: PegNode): PegParser {
    this.nodes.push(node);
    return this.wrap(this.nodes.length - 1);
  }

  /** The node behind an id (read-only view while building). */
  node(id: PegNodeId): PegNode {
    const n = this.nodes[id];
    if (n === undefined) throw new LlamapegError("ERR_INVALID_ARGUMENT", `no parser with id ${id}`, { where: "builder" });
    return n;
  }

  hasRule(name: string): boolean {
    return this.rules.has(name);
  }

  /** Matches nothing, always succeeds.  S -> ε */
  eps(): PegParser {
    return this.add({ kind: "epsilon" });
  }

  /** Matches the start of the input.  S -> ^ */
  start(): PegParser {
    return this.add({ kind: "start" });
  }

  /** Matches the end of the input.  S -> $ */
  end(): PegParser {
    return this.add({ kind: "end" });
  }

  /** Matches an exact string (compared as UTF-8 bytes).  S -> "hello" */
  literal(text: string): PegParser {
    return this.add({ kind: "literal", text });
  }

  /**
   * All parsers in order; nested sequences are flattened.  S -> A B C
   * With no argument: an empty sequence (matches ε).
   */
  sequence(parsers: readonly PegInput[] = []): PegParser {
    const flat: PegNodeId[] = [];
    for (const p of parsers) {
      const id = idOf(p);
      const n = this.node(id);
      if (n.kind === "sequence") flat.push(...n.children);
      else flat.push(id);
    }
    return this.add({ kind: "sequence", children: flat });
  }

  /**
   * The first alternative that does not fail; nested choices are flattened.  S -> A | B | C
   * With no argument: an empty choice (always fails).
   */
  choice(parsers: readonly PegInput[] = []): PegParser {
    const flat: PegNodeId[] = [];
    for (const p of parsers) {
      const id = idOf(p);
      const n = this.node(id);
      if (n.kind === "choice") flat.push(...n.children);
      else flat.push(id);
    }
    return this.add({ kind: "choice", children: flat });
  }

  /** One or more repetitions.  S -> A+ */
  oneOrMore(p: PegInput): PegParser {
    return this.repeat(p, 1, -1);
  }

  /** Zero or more repetitions, always succeeds.  S -> A* */
  zeroOrMore(p: PegInput): PegParser {
    return this.repeat(p, 0, -1);
  }

  /** Zero or one occurrence, always succeeds.  S -> A? */
  optional(p: PegInput): PegParser {
    return this.repeat(p, 0, 1);
  }

  /**
   * Between `min` and `max` repetitions (inclusive; `max` -1 = unbounded); with one count, exactly n.
   *   S -> A{m,n}    S -> A{n}
   * A repetition stops at the end of the input and on an empty match.
   */
  repeat(p: PegInput, min: number, max?: number): PegParser {
    return this.add({ kind: "repetition", child: idOf(p), min, max: max ?? min });
  }

  /** Positive lookahead: succeeds if `p` does, consumes nothing.  S -> &A */
  peek(p: PegInput): PegParser {
    return this.add({ kind: "and", child: idOf(p) });
  }

  /** Negative lookahead: succeeds if `p` fails, consumes nothing.  S -> !A */
  negate(p: PegInput): PegParser {
    return this.add({ kind: "not", child: idOf(p) });
  }

  /** Any single UTF-8 character.  S -> . */
  any(): PegParser {
    return this.add({ kind: "any" });
  }

  /**
   * Between `min` and `max` characters of a class (`max` -1 = unbounded).  S -> [a-z]{m,n}
   * Classes: ranges `a-z`, negation `^`, escapes `\n \t \r \\ \] \[ \xHH \uHHHH \UHHHHHHHH`;
   * brackets are optional (`"a-z"` = `"[a-z]"`).
   */
  chars(classes: string, min = 1, max = -1): PegParser {
    const { ranges, negated } = parseCharClass(classes);
    return this.add({ kind: "chars", pattern: classes, ranges, negated, min, max });
  }

  /**
   * A reference to a named rule, resolved when the arena is built (forward and recursive references).
   *   S -> name
   */
  ref(name: string): PegParser {
    return this.add({ kind: "ref", name });
  }

  /** Zero or more whitespace characters (space, \t, \n, \v, \f, \r).  S -> [ \t\n]* */
  space(): PegParser {
    return this.add({ kind: "space" });
  }

  /**
   * Everything up to a delimiter (not consumed); at the end of a partial input, a delimiter prefix
   * stops it too.  S -> (!delim .)*
   */
  until(delimiter: string): PegParser {
    return this.add({ kind: "until", delimiters: [delimiter] });
  }

  /** Everything up to the first of several delimiters (not consumed).  S -> (!(d1 | d2) .)* */
  untilOneOf(delimiters: readonly string[]): PegParser {
    return this.add({ kind: "until", delimiters: [...delimiters] });
  }

  /** Everything to the end of the input.  S -> .* */
  rest(): PegParser {
    return this.untilOneOf([]);
  }

  /** String content without the surrounding delimiter: escapes `\" \\ \/ \b \f \n \r \t \uXXXX`. */
  stringContent(delimiter: string): PegParser {
    if (delimiter.length !== 1) throw new LlamapegError("ERR_INVALID_ARGUMENT", "string content delimiter must be one character", { where: "stringContent" });
    return this.add({ kind: "string", delimiter });
  }

  /** Rule `double-quoted-string`:  S -> '"' content '"' */
  doubleQuotedString(): PegParser {
    return this.rule("double-quoted-string", () => this.sequence([this.literal('"'), this.stringContent('"'), this.literal('"')]));
  }

  /** Rule `single-quoted-string`:  S -> "'" content "'" */
  singleQuotedString(): PegParser {
    return this.rule("single-quoted-string", () => this.sequence([this.literal("'"), this.stringContent("'"), this.literal("'")]));
  }

  /** Rule `quoted-string`: either quoting style.  S -> dq-string | sq-string */
  quotedString(): PegParser {
    return this.rule("quoted-string", () => this.choice([this.doubleQuotedString(), this.singleQuotedString()]));
  }

  /**
   * Rule `json-number`. A number is only committed once the next character cannot extend it, so a
   * partial `3` waits for a possible `.14`.
   *   S -> "-"? ("0" | [1-9][0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)? ![0-9.eE+-]
   */
  jsonNumber(): PegParser {
    return this.rule("json-number", () => {
      const digit19 = this.chars("[1-9]", 1, 1);
      const digits = this.chars("[0-9]");
      const intPart = this.choice([this.literal("0"), this.sequence([digit19, this.chars("[0-9]", 0, -1)])]);
      const frac = this.sequence([this.literal("."), digits]);
      const exp = this.sequence([this.choice([this.literal("e"), this.literal("E")]), this.optional(this.chars("[+-]", 1, 1)), digits]);
      const notContinuation = this.negate(this.chars("[0-9.eE+-]", 1, 1));
      return this.sequence([this.optional(this.literal("-")), intPart, this.optional(frac), this.optional(exp), notContinuation]);
    });
  }

  /** Rule `json-string`:  S -> '"' content '"' */
  jsonString(): PegParser {
    return this.rule("json-string", () => this.sequence([this.literal('"'), this.stringContent('"'), this.literal('"')]));
  }

  /** Rule `json-bool`:  S -> "true" | "false" */
  jsonBool(): PegParser {
    return this.rule("json-bool", () => this.choice([this.literal("true"), this.literal("false")]));
  }

  /** Rule `json-null`:  S -> "null" */
  jsonNull(): PegParser {
    return this.rule("json-null", () => this.literal("null"));
  }

  /** Rule `json-object`:  S -> "{" ws ("}" | member (ws "," ws member)* ws "}") */
  jsonObject(): PegParser {
    return this.rule("json-object", () => {
      const ws = this.space();
      const member = this.sequence([this.jsonString(), ws, this.literal(":"), ws, this.json()]);
      const members = this.sequence([member, this.zeroOrMore(this.sequence([ws, this.literal(","), ws, member]))]);
      return this.sequence([this.literal("{"), ws, this.choice([this.literal("}"), this.sequence([members, ws, this.literal("}")])])]);
    });
  }

  /** Rule `json-array`:  S -> "[" ws ("]" | value (ws "," ws value)* ws "]") */
  jsonArray(): PegParser {
    return this.rule("json-array", () => {
      const ws = this.space();
      const elements = this.sequence([this.json(), this.zeroOrMore(this.sequence([ws, this.literal(","), ws, this.json()]))]);
      return this.sequence([this.literal("["), ws, this.choice([this.literal("]"), this.sequence([elements, ws, this.literal("]")])])]);
    });
  }

  /**
   * Rule `json-value`: any JSON value.
   *   S -> object | array | string | number | true | false | null
   */
  json(): PegParser {
    return this.rule("json-value", () =>
      this.choice([this.jsonObject(), this.jsonArray(), this.jsonString(), this.jsonNumber(), this.jsonBool(), this.jsonNull()]),
    );
  }

  /** An object member with a fixed key:  S -> '"key"' ws ":" ws P */
  jsonMember(key: string, p: PegInput): PegParser {
    const ws = this.space();
    return this.sequence([this.literal(`"${key}"`), ws, this.literal(":"), ws, p]);
  }

  /** Rule `python-string`: single- or double-quoted. */
  pythonString(): PegParser {
    return this.rule("python-string", () => this.choice([this.doubleQuotedString(), this.singleQuotedString()]));
  }

  /** Same as `jsonNumber()` (rule `json-number`). */
  pythonNumber(): PegParser {
    return this.jsonNumber();
  }

  /** Rule `python-bool`:  S -> "True" | "False" */
  pythonBool(): PegParser {
    return this.rule("python-bool", () => this.choice([this.literal("True"), this.literal("False")]));
  }

  /** Rule `python-none`:  S -> "None" */
  pythonNull(): PegParser {
    return this.rule("python-none", () => this.literal("None"));
  }

  /** Rule `python-dict`:  S -> "{" ws ("}" | member ("," member)* ws "}") ws */
  pythonDict(): PegParser {
    return this.rule("python-dict", () => {
      const ws = this.space();
      const member = this.sequence([this.pythonString(), ws, this.literal(":"), ws, this.pythonValue()]);
      const members = this.sequence([member, this.zeroOrMore(this.sequence([ws, this.literal(","), ws, member]))]);
      return this.sequence([this.literal("{"), ws, this.choice([this.literal("}"), this.sequence([members, ws, this.literal("}")])]), ws]);
    });
  }

  /** Rule `python-array`:  S -> "[" ws ("]" | value ("," ws value)* ws "]") ws */
  pythonArray(): PegParser {
    return this.rule("python-array", () => {
      const ws = this.space();
      const elements = this.sequence([this.pythonValue(), this.zeroOrMore(this.sequence([this.literal(","), ws, this.pythonValue()]))]);
      return this.sequence([this.literal("["), ws, this.choice([this.literal("]"), this.sequence([elements, ws, this.literal("]")])]), ws]);
    });
  }

  /**
   * Rule `python-value`: Python literal syntax (True/False/None, either quote style).
   *   S -> dict | array | string | number | True | False | None
   */
  pythonValue(): PegParser {
    return this.rule("python-value", () =>
      this.choice([this.pythonDict(), this.pythonArray(), this.pythonString(), this.pythonNumber(), this.pythonBool(), this.pythonNull()]),
    );
  }

  /** Text in `<...>` or `[...]`.  S -> "<" (!">" .)* ">" | "[" (!"]" .)* "]" */
  marker(): PegParser {
    // Created right to left, as the reference's compiled `literal("<") + until(">") + literal(">")`
    // evaluates its operands (GCC), so node ids match.
    const sharp = (): PegParser => {
      const close = this.literal(">");
      const body = this.until(">");
      return this.sequence([this.sequence([this.literal("<"), body]), close]);
    };
    const square = (): PegParser => {
      const close = this.literal("]");
      const body = this.until("]");
      return this.sequence([this.sequence([this.literal("["), body]), close]);
    };
    const a = sharp();
    return this.choice([a, square()]);
  }

  /**
   * The part of `s` before the first `delimiter` (all of `s` without one), as a literal; ε for "".
   *   S -> "prefix-of-s"
   */
  prefix(s: string, delimiter = ""): PegParser {
    if (s === "") return this.eps();
    if (delimiter === "") return this.literal(s);
    const at = s.indexOf(delimiter);
    return this.literal(at < 0 ? s : s.slice(0, at));
  }

  /**
   * Parses as `p`; in GBNF, the grammar of a JSON schema (`raw`: a bare string/enum value uses `p`'s
   * grammar instead of a quoted JSON string).
   */
  schema(p: PegInput, name: string, schema: unknown, raw = false): PegParser {
    return this.add({ kind: "schema", child: idOf(p), name, schema, raw });
  }

  /**
   * A named rule (name cleaned to [a-zA-Z0-9-]); returns a ref to it. Rules create AST nodes and GBNF
   * rules. `trigger`: an entry point of the lazy grammar. Passing a function builds the body once: if the
   * rule exists the function is not called, and the body may refer to the rule recursively.
   *   name -> P
   */
  rule(name: string, p: PegInput | (() => PegParser), trigger = false): PegParser {
    const clean = cleanRuleName(name);
    if (typeof p === "function") {
      if (this.rules.has(clean)) return this.ref(clean);
      // Placeholder first, so a recursive body can find the rule while it is being built.
      const placeholder = this.any();
      const placeholderRule = this.add({ kind: "rule", name: clean, child: placeholder.id, trigger });
      this.rules.set(clean, placeholderRule.id);
      const body = p();
      const real = this.add({ kind: "rule", name: clean, child: body.id, trigger });
      this.rules.set(clean, real.id);
      return this.ref(clean);
    }
    const r = this.add({ kind: "rule", name: clean, child: idOf(p), trigger });
    this.rules.set(clean, r.id);
    return this.ref(clean);
  }

  /** A rule that is an entry point of the lazy grammar (`toGbnf({lazy: true})` emits only these). */
  triggerRule(name: string, p: PegInput | (() => PegParser)): PegParser {
    return this.rule(name, p, true);
  }

  /** Like `p`, but when `p` needs more input its AST nodes are dropped (no partial output). */
  atomic(p: PegInput): PegParser {
    return this.add({ kind: "atomic", child: idOf(p) });
  }

  /** Like `p`, and creates an AST node tagged `tag` (tags, unlike rule names, may repeat). */
  tag(tag: string, p: PegInput): PegParser {
    return this.add({ kind: "tag", child: idOf(p), tag });
  }

  /** Parses as `p` but exports `grammar` verbatim to GBNF ("" emits nothing). */
  gbnf(p: PegInput, grammar: string): PegParser {
    return this.add({ kind: "gbnf", child: idOf(p), grammar });
  }

  /**
   * Parses as `p` (which must consume the delimiter, e.g. `until(d) + d`); exports an Aho-Corasick
   * grammar for "everything up to and including the first delimiter".
   */
  ac(p: PegInput, delimiters: string | readonly string[]): PegParser {
    const ds = typeof delimiters === "string" ? [delimiters] : [...delimiters];
    if (ds.length === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", "ac parser requires at least one delimiter", { where: "ac" });
    return this.add({ kind: "ac", child: idOf(p), delimiters: ds });
  }

  setRoot(p: PegInput): void {
    this.root = idOf(p);
  }

  /** Resolves refs (every child that is a ref now points at the rule) and returns the arena. */
  build(): PegArena {
    const resolve = (id: PegNodeId): PegNodeId => {
      const n = this.nodes[id]!;
      if (n.kind !== "ref") return id;
      const target = this.rules.get(n.name);
      if (target === undefined) throw new LlamapegError("ERR_PEG_INVALID", `rule not found: ${n.name}`, { where: `parsers/${id}` });
      return target;
    };
    const nodes = this.nodes.map((n): PegNode => {
      switch (n.kind) {
        case "sequence":
        case "choice":
          return { ...n, children: n.children.map(resolve) };
        case "repetition":
        case "and":
        case "not":
        case "tag":
        case "atomic":
        case "gbnf":
        case "ac":
        case "rule":
        case "schema":
          return { ...n, child: resolve(n.child) };
        default:
          return n;
      }
    });
    const root = this.root === INVALID_NODE_ID ? INVALID_NODE_ID : resolve(this.root);
    return new PegArena(nodes, this.rules, root);
  }
}

/** A fresh builder. */
export function pegBuilder(): PegBuilder {
  return new PegBuilder();
}

/** Builds an arena: `fn` returns the root parser. The reference's `build_peg_parser()`. */
export function buildPegParser(fn: (p: PegBuilder) => PegParser): PegArena {
  const b = new PegBuilder();
  b.setRoot(fn(b));
  return b.build();
}
