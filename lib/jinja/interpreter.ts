/**
 * Evaluates a @huggingface/jinja AST with llama.cpp's runtime semantics (`common/jinja/runtime.cpp`).
 *
 * Why not @huggingface/jinja's own `Interpreter`: its filters are hard-coded inside one method with
 * no registration API, and its semantics differ from the reference in ways real templates hit
 * (`{{ true }}` prints "true" not "True", `none + "x"` throws, loops over undefined throw, object
 * keys must be strings, `tojson` spacing, `is defined` on members of undefined...). Prompts must be
 * byte-identical to the reference, so the evaluation follows the reference, node by node, and the
 * library supplies what it does well: the lexer (with lstrip_blocks/trim_blocks) and the parser.
 */
import type { Identifier, Node, NodeOf } from "./ast.js";
import { type Builtin, GLOBALS, builtinsOf, isIn } from "./builtins.js";
import { TemplateLimitError } from "./errors.js";
import {
  Budget,
  CALL_COST,
  LOOP_ITERATION_COST,
  STRING_CHARS_PER_STEP,
  checkLength,
  maxItems,
  spend,
  spendItems,
  spendString,
  withBudget,
} from "./limits.js";
import { letsLoopObjectOut, readsLoopObject } from "./loop-use.js";
import { MarkedBuilder, type Marks, concatMarks, isMarkedAt } from "./marks.js";
import {
  type FuncArgs,
  type JValue,
  type RuntimeHooks,
  type ValueOf,
  TemplateRuntimeError,
  arr,
  asMarked,
  asString,
  bool,
  equals,
  float,
  func,
  int,
  isNumeric,
  markUsed,
  noteChange,
  obj,
  objGet,
  objSet,
  printInto,
  str,
  truthy,
  typeName,
  undef,
} from "./value.js";

/** The innermost AST node each render error came from. */
export const failedNodes = new WeakMap<Error, Node>();

/** Shared values of renders that collect no usage stats (values are not changed in place then). */
const TRUE = bool(true);
const FALSE = bool(false);
const NOTHING = undef();
const EMPTY = str("");

/** Literal values by node (see Evaluator.literal). */
const literals = new WeakMap<object, JValue>();

/** The `loop` object's keys, their map keys, and what building it with objSet charges. */
const LOOP_KEYS = ["index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem"] as const;
const LOOP_KEY_VALUES = LOOP_KEYS.map((k) => str(k));
const LOOP_OBJECT_COST = LOOP_KEYS.reduce((n, k) => n + 2 + k.length / STRING_CHARS_PER_STEP, 0);

/**
 * The `loop` object of iteration `i` of `kept`. Built straight into its map: the same object
 * (and the same charge, as one sum) as objSet would build key by key; the keys are shared unless
 * a probe collects usage stats on them.
 */
function loopObject(kept: readonly JValue[], i: number, stats: boolean): ValueOf<"object"> {
  if (maxItems() < LOOP_KEYS.length) {
    // a budget this small fails on the loop object, at the key objSet would fail on
    const pairs: [JValue, JValue][] = LOOP_KEYS.map((k) => [str(k), undef()]);
    return obj(pairs, false);
  }
  spend(LOOP_OBJECT_COST);
  const n = kept.length;
  const keys = stats ? LOOP_KEYS.map((k) => str(k)) : LOOP_KEY_VALUES;
  const values: JValue[] = [
    int(i + 1),
    int(i),
    int(n - i),
    int(n - i - 1),
    stats ? bool(i === 0) : i === 0 ? TRUE : FALSE,
    stats ? bool(i === n - 1) : i === n - 1 ? TRUE : FALSE,
    int(n),
    i > 0 ? kept[i - 1]! : undef("previtem"),
    i < n - 1 ? kept[i + 1]! : undef("nextitem"),
  ];
  const entries = new Map<string, [JValue, JValue]>();
  for (let j = 0; j < LOOP_KEYS.length; j++) entries.set(LOOP_KEYS[j]!, [keys[j]!, values[j]!]);
  return { kind: "object", entries, builtins: false };
}

/**
 * A test's name -> its global ("test_is_<name>") and function, made once (a concatenation would be
 * hashed anew on every lookup). Not a cache: one entry per test GLOBALS defines, a fixed set.
 */
const TESTS: ReadonlyMap<string, { name: string; fn: Builtin }> = new Map(
  [...GLOBALS].flatMap(([name, fn]) => (name.startsWith("test_is_") ? [[name.slice("test_is_".length), { name, fn }] as const] : [])),
);

/** `[self, ...args]` without the iterator protocol. */
function withSelf(self: JValue, args: readonly JValue[]): JValue[] {
  const all = new Array<JValue>(args.length + 1);
  all[0] = self;
  for (let i = 0; i < args.length; i++) all[i + 1] = args[i]!;
  return all;
}

/** The argument for parameter `key` (at position `i`): by keyword, else by position. */
function argumentFor(args: readonly JValue[], key: string, i: number): JValue {
  for (const a of args) if (a.kind === "kwarg" && a.key === key) return a.value;
  const p = args[i];
  return p !== undefined && p.kind !== "kwarg" ? p : undef();
}

/**
 * One loop object for a whole loop whose body only reads its members (loop-use.ts): the same
 * entries as loopObject builds, their values replaced for each iteration.
 */
class LoopObject {
  private readonly pairs: [JValue, JValue][] = LOOP_KEY_VALUES.map((k) => [k, NOTHING]);
  readonly value: ValueOf<"object"> = {
    kind: "object",
    entries: new Map(LOOP_KEYS.map((k, j) => [k, this.pairs[j]!])),
    builtins: false,
  };
  update(kept: readonly JValue[], i: number): void {
    const n = kept.length;
    const p = this.pairs;
    p[0]![1] = int(i + 1);
    p[1]![1] = int(i);
    p[2]![1] = int(n - i);
    p[3]![1] = int(n - i - 1);
    p[4]![1] = i === 0 ? TRUE : FALSE;
    p[5]![1] = i === n - 1 ? TRUE : FALSE;
    p[6]![1] = int(n);
    p[7]![1] = i > 0 ? kept[i - 1]! : undef("previtem");
    p[8]![1] = i < n - 1 ? kept[i + 1]! : undef("nextitem");
  }
}

class BreakSignal {}
class ContinueSignal {}

/**
 * A variable scope. The reference copies the parent's variables into every new scope; a child
 * that reads through to its parent is equivalent because a parent is never assigned to while a
 * child of it is running (loop bodies, macros and call blocks write only to their own scope), and
 * it avoids copying every variable on each loop and macro call.
 */
export class Scope {
  readonly vars = new Map<string, JValue>();
  constructor(private readonly parent?: Scope) {}
  get(name: string): JValue {
    for (let s: Scope | undefined = this; s; s = s.parent) {
      const v = s.vars.get(name);
      if (v !== undefined) return v;
    }
    return undef(name);
  }
  set(name: string, v: JValue): void {
    this.vars.set(name, v);
  }
}

const FILTER_ALIASES: Record<string, string> = { count: "length", d: "default", e: "escape", trim: "strip" };
const COERCED_TO_STRING = new Set(["capitalize", "lower", "replace", "strip", "title", "upper", "wordcount"]);

const nullish = (v: JValue): boolean => v.kind === "none" || v.kind === "undefined";

/** The reference treats None/undefined as "" when concatenated with a string. */
function concatNullish(op: string, left: JValue, right: JValue): JValue | undefined {
  if ((op === "+" || op === "~") && ((nullish(left) && right.kind === "string") || (nullish(right) && left.kind === "string")))
    return concat(nullish(left) ? { v: "" } : asMarked(left), nullish(right) ? { v: "" } : asMarked(right));
  return undefined;
}

/** Concatenates two strings with their marks, after checking the result may exist. */
function concat(a: { v: string; m?: Marks }, b: { v: string; m?: Marks }): JValue {
  spendString(a.v.length + b.v.length);
  if (a.m === undefined && b.m === undefined) return str(a.v + b.v);
  return str(a.v + b.v, concatMarks(a.v.length, a.m, b.v.length, b.m));
}

export class Evaluator {
  /** Current evaluation depth (expression nesting plus macro recursion). */
  private depth = 0;
  /** The program being rendered (which loops read their `loop` object is known per program). */
  private program: NodeOf<"Program"> | undefined;

  constructor(
    private readonly rt: RuntimeHooks,
    private readonly budget: Budget,
  ) {}

  /** Renders a whole program in `scope`. */
  render(program: NodeOf<"Program">, scope: Scope): string {
    return this.renderMarked(program, scope).v;
  }

  /** Renders a whole program in `scope`; `m` marks the characters that came from input values. */
  renderMarked(program: NodeOf<"Program">, scope: Scope): { v: string; m?: Marks } {
    this.program = program;
    return withBudget(this.budget, () => {
      const out = this.block(program.body, scope);
      return out.kind === "string" ? (out.m ? { v: out.v, m: out.m } : { v: out.v }) : { v: "" };
    });
  }

  /** The statements' output as one string value (with marks). */
  private block(stmts: readonly Node[], scope: Scope): JValue {
    if (stmts.length === 0) return this.rt.stats ? str("") : EMPTY;
    if (stmts.length === 1) {
      const v = this.eval(stmts[0]!, scope);
      // one string statement: that string (a fresh value when usage stats must not flow back to
      // the value printed); anything else prints into a builder as below
      if (v.kind === "string") return this.rt.stats ? str(v.v, v.m) : v;
      const out = new MarkedBuilder();
      this.print(out, v, stmts[0]!);
      const r = out.result();
      return str(r.v, r.m);
    }
    const out = new MarkedBuilder();
    for (const s of stmts) this.print(out, this.eval(s, scope), s);
    const r = out.result();
    return str(r.v, r.m);
  }

  /** Appends what `v` (the value of `node`) prints; a limit hit while printing is `node`'s. */
  private print(out: MarkedBuilder, v: JValue, node: Node): void {
    try {
      const before = out.length;
      printInto(out, v);
      spendString(out.length - before);
      checkLength(out.length);
    } catch (e) {
      if (e instanceof Error && !failedNodes.has(e)) failedNodes.set(e, node);
      throw e;
    }
  }

  private call(fn: JValue, args: JValue[], what: string): JValue {
    if (fn.kind !== "func") throw new TemplateRuntimeError(`Callee is not a function: got ${typeName(fn)} (${what})`);
    const fa: FuncArgs = { name: fn.name, args: fn.self ? withSelf(fn.self, args) : args, rt: this.rt };
    return fn.fn(fa);
  }

  /** try_builtin_func: the builtin `name` of `input`'s type, bound to it. */
  private builtin(name: string, input: JValue, undefOnMissing: boolean): JValue {
    if (this.rt.stats) markUsed(input, false, name);
    const fn = builtinsOf(input)?.get(name);
    if (fn) return func(name, fn, input);
    if (undefOnMissing) return undef(name);
    throw new TemplateRuntimeError(`Unknown (built-in) filter '${name}' for type ${typeName(input)}`);
  }

  eval(node: Node, scope: Scope): JValue {
    try {
      if (++this.depth > this.budget.peakNesting) {
        this.budget.peakNesting = this.depth;
        if (this.depth > this.budget.limits.maxNesting)
          throw new TemplateLimitError("nesting", `the template nests deeper than ${this.budget.limits.maxNesting} levels (maxNesting)`);
      }
      if (--this.budget.steps < 0) spend(0);
      return this.evalNode(node, scope);
    } catch (e) {
      // remember the innermost node that failed; the API edge turns it into a source position
      if (e instanceof Error && !failedNodes.has(e)) failedNodes.set(e, node);
      throw e;
    } finally {
      this.depth--;
    }
  }

  private evalNode(node: Node, scope: Scope): JValue {
    switch (node.type) {
      case "Identifier":
        return this.identifier(node, scope);
      case "MemberExpression":
        return this.member(node, scope);
      case "StringLiteral":
        return this.literal(node, str);
      case "BinaryExpression":
        return this.binary(node, scope);
      case "If":
        return this.block(truthy(this.eval(node.test, scope)) ? node.body : node.alternate, scope);
      case "TestExpression": {
        const input = this.eval(node.operand, scope);
        const test = TESTS.get(node.test.value);
        if (!test) throw new TemplateRuntimeError(`Unknown test '${node.test.value}'`);
        const r = truthy(test.fn({ name: test.name, args: [input], rt: this.rt }));
        return this.bool(node.negate ? !r : r);
      }
      case "FilterExpression":
        return this.filter(this.eval(node.operand, scope), node.filter, scope);
      case "CallExpression": {
        const args = this.arguments(node.args, scope);
        const callee = this.eval(node.callee, scope);
        // this.withScope(scope, ...) without a closure per call
        const prev = this.currentScope;
        this.currentScope = scope;
        try {
          return this.call(callee, args, "call");
        } finally {
          this.currentScope = prev;
        }
      }
      case "For":
        return this.forLoop(node, scope);
      case "Set":
        this.set(node, scope);
        return this.nothing();
      case "IntegerLiteral":
        return this.literal(node, int);
      case "ArrayLiteral":
        spendItems(node.value.length);
        return arr(node.value.map((x) => this.eval(x, scope)));
      case "UnaryExpression": {
        const v = this.eval(node.argument, scope);
        if (node.operator.value === "not") return this.bool(!truthy(v));
        if (node.operator.value === "-") {
          if (v.kind === "int") return int(-v.v);
          if (v.kind === "float") return float(-v.v);
          throw new TemplateRuntimeError("Unary - operator requires numeric operand");
        }
        throw new TemplateRuntimeError(`Unknown unary operator '${node.operator.value}'`);
      }
      case "Ternary":
        return truthy(this.eval(node.condition, scope)) ? this.eval(node.trueExpr, scope) : this.eval(node.falseExpr, scope);
      case "SelectExpression":
        return truthy(this.eval(node.test, scope)) ? this.eval(node.lhs, scope) : this.nothing();
      case "KeywordArgumentExpression":
        return { kind: "kwarg", key: node.key.value, value: this.eval(node.value, scope) };
      case "Macro":
        this.macro(node, scope);
        return this.nothing();
      case "Comment":
        return this.nothing();
      case "Program":
        return this.block(node.body, scope);
      case "FloatLiteral":
        return this.literal(node, float);
      case "TupleLiteral":
        spendItems(node.value.length);
        return arr(
          node.value.map((x) => this.eval(x, scope)),
          true,
        );
      case "ObjectLiteral": {
        const o = obj();
        for (const [k, v] of node.value) objSet(o, this.eval(k, scope), this.eval(v, scope));
        return o;
      }
      case "Break":
        throw new BreakSignal();
      case "Continue":
        throw new ContinueSignal();
      case "CallStatement":
        return this.callStatement(node, scope);
      case "FilterStatement":
        return this.filter(this.block(node.body, scope), node.filter, scope);
      case "SliceExpression":
      case "SpreadExpression":
      case "KeywordSpreadExpression":
        throw new TemplateRuntimeError(`${node.type} is not supported here`);
    }
  }

  /** A boolean value; shared ones unless a probe collects usage stats on values. */
  private bool(x: boolean): JValue {
    return this.rt.stats ? bool(x) : x ? TRUE : FALSE;
  }

  /** What a statement evaluates to (prints nothing); shared unless a probe collects usage stats. */
  private nothing(): JValue {
    return this.rt.stats ? undef() : NOTHING;
  }

  /**
   * A literal's value, made once per node: scalar values are never changed in place, except for
   * the usage stats a capability probe collects, so a probe gets fresh ones.
   */
  private literal<T>(node: { value: T }, make: (v: T) => JValue): JValue {
    if (this.rt.stats) return make(node.value);
    const cached = literals.get(node);
    if (cached !== undefined) return cached;
    const v = make(node.value);
    literals.set(node, v);
    return v;
  }

  private arguments(nodes: readonly Node[], scope: Scope): JValue[] {
    const out = new Array<JValue>(nodes.length);
    for (let i = 0; i < nodes.length; i++) out[i] = this.eval(nodes[i]!, scope);
    return out;
  }

  private argument(a: Node, scope: Scope): JValue {
    return this.eval(a, scope);
  }

  private identifier(node: Identifier, scope: Scope): JValue {
    const v = scope.get(node.value);
    if (v.kind !== "undefined") {
      if (this.rt.stats) markUsed(v);
      return v;
    }
    const g = GLOBALS.get(node.value);
    if (g) return func(node.value, g);
    return undef(node.value);
  }

  private binary(node: NodeOf<"BinaryExpression">, scope: Scope): JValue {
    const op = node.operator.value;
    const left = this.eval(node.left, scope);
    if (op === "and") return truthy(left) ? this.eval(node.right, scope) : left;
    if (op === "or") return truthy(left) ? left : this.eval(node.right, scope);
    const right = this.eval(node.right, scope);
    if (op === "==") return this.bool(equals(left, right));
    if (op === "!=") return this.bool(!equals(left, right));

    // the commonest case first: two strings joined (what the general rule below gives them)
    if (left.kind === "string" && right.kind === "string" && (op === "~" || op === "+")) return concat(left, right);
    const concatNull = (): JValue | undefined => concatNullish(op, left, right);
    if (left.kind === "undefined" || right.kind === "undefined") {
      if (right.kind === "undefined" && (op === "in" || op === "not in")) return this.bool(op === "not in");
      const r = concatNull();
      if (r) return r;
      throw new TemplateRuntimeError(`Cannot perform operation ${op} on undefined values`);
    }
    if (left.kind === "none" || right.kind === "none") {
      const r = concatNull();
      if (r) return r;
      throw new TemplateRuntimeError("Cannot perform operation on null values");
    }
    if (isNumeric(left) && isNumeric(right)) {
      const a = left.v;
      const b = right.v;
      const isFloat = left.kind === "float" || right.kind === "float";
      switch (op) {
        case "+":
        case "-":
        case "*": {
          const r = op === "+" ? a + b : op === "-" ? a - b : a * b;
          return isFloat ? float(r) : int(r);
        }
        case "/":
          return float(a / b);
        case "%": {
          const r = a % b;
          return isFloat ? float(r) : int(r);
        }
        case "<":
          return this.bool(a < b);
        case ">":
          return this.bool(a > b);
        case ">=":
          return this.bool(a >= b);
        case "<=":
          return this.bool(a <= b);
      }
    }
    const isIn_ = (): boolean => truthy(isIn({ name: "test_is_in", args: [left, right], rt: this.rt }));
    if (left.kind === "array" && right.kind === "array") {
      if (op === "+") {
        spendItems(left.items.length + right.items.length);
        return arr([...left.items, ...right.items]);
      }
    } else if (right.kind === "array") {
      if (op === "in") return this.bool(isIn_());
      if (op === "not in") return this.bool(!isIn_());
    }
    if ((left.kind === "string" || right.kind === "string") && (op === "~" || op === "+")) return concat(asMarked(left), asMarked(right));
    if (op === "*" && ((left.kind === "string" && right.kind === "int") || (left.kind === "int" && right.kind === "string"))) {
      const s = (left.kind === "string" ? left : right) as { v: string; m?: Marks };
      const n = left.kind === "int" ? left.v : (right as { v: number }).v;
      if (n <= 0 || s.v.length === 0) return str("");
      // sized before it allocates: 'a' * 134217729 is a limit error, not a V8 fatal error
      spendString(s.v.length * n);
      if (s.m === undefined) return str(s.v.repeat(n));
      const out = new MarkedBuilder();
      for (let i = 0; i < n; i++) out.append(s.v, s.m);
      const r = out.result();
      return str(r.v, r.m);
    }
    if (left.kind === "string" && right.kind === "string") {
      if (op === "in") return this.bool(isIn_());
      if (op === "not in") return this.bool(!isIn_());
    }
    if (right.kind === "object") {
      if (op === "in") return this.bool(isIn_());
      if (op === "not in") return this.bool(!isIn_());
    }
    throw new TemplateRuntimeError(`Unknown operator "${op}" between ${typeName(left)} and ${typeName(right)}`);
  }

  private filter(input0: JValue, filter: Node, scope: Scope): JValue {
    let input = input0;
    let name: string;
    let args: JValue[] = [];
    if (filter.type === "Identifier") {
      name = filter.value;
    } else if (filter.type === "CallExpression") {
      if (filter.callee.type !== "Identifier") throw new TemplateRuntimeError("Filter callee must be an identifier");
      name = filter.callee.value;
      args = this.arguments(filter.args, scope);
    } else {
      throw new TemplateRuntimeError("Invalid filter expression");
    }
    name = FILTER_ALIASES[name] ?? name;
    if (filter.type === "Identifier" && input.kind !== "undefined" && input.kind !== "string" && COERCED_TO_STRING.has(name))
      input = str(asString(input));
    // this.call(this.builtin(name, input, false), args), without the bound function value
    if (this.rt.stats) markUsed(input, false, name);
    const fn = builtinsOf(input)?.get(name);
    if (!fn) throw new TemplateRuntimeError(`Unknown (built-in) filter '${name}' for type ${typeName(input)}`);
    return fn({ name, args: withSelf(input, args), rt: this.rt });
  }

  private member(node: NodeOf<"MemberExpression">, scope: Scope): JValue {
    const object = this.eval(node.object, scope);
    let property: JValue;
    if (node.computed) {
      if (node.property.type === "SliceExpression") return this.slice(object, node.property, scope);
      property = this.eval(node.property, scope);
    } else {
      if (node.property.type !== "Identifier") throw new TemplateRuntimeError("Static member property must be an identifier");
      // like jinja2, obj.name prefers the builtin of that name over a key of that name
      const name = node.property.value;
      if (this.rt.stats) markUsed(object, false, name);
      const fn = builtinsOf(object)?.get(name);
      if (fn) return func(name, fn, object);
      property = this.literal(node.property, str);
    }
    if (property.kind === "undefined") return undef("object_property");
    let val: JValue | undefined;
    if (property.kind === "object" || (property.kind === "array" && !property.tuple) || property.kind === "func")
      throw new TemplateRuntimeError(`Type: ${typeName(property)} is not allowed as object key`);
    if (object.kind === "undefined") return undef("object_property");
    if (object.kind === "object") {
      val = objGet(object, property) ?? this.builtin(asString(property), object, true);
    } else if (object.kind === "array" || object.kind === "string") {
      if (property.kind === "int") {
        if (object.kind === "array") {
          const i = property.v < 0 ? property.v + object.items.length : property.v;
          if (i >= 0 && i < object.items.length) val = object.items[i]!;
        } else if (property.v >= 0 && property.v < object.v.length) {
          val = str(object.v[property.v]!, isMarkedAt(object.m, property.v) ? [0, 1] : undefined);
        }
      } else if (property.kind === "string") {
        val = this.builtin(property.v, object, true);
      } else {
        throw new TemplateRuntimeError(`Cannot access property with non-string/non-number: got ${typeName(property)}`);
      }
    } else {
      if (property.kind !== "string") throw new TemplateRuntimeError(`Cannot access property with non-string: got ${typeName(property)}`);
      val = this.builtin(property.v, object, true);
    }
    val ??= undef("object_property");
    if (this.rt.stats) {
      markUsed(val);
      markUsed(object, false, property.kind === "int" ? "array_access" : property.kind === "string" ? "object_access" : undefined);
      markUsed(property);
    }
    return val;
  }

  private slice(object: JValue, s: NodeOf<"SliceExpression">, scope: Scope): JValue {
    const size = object.kind === "array" ? object.items.length : object.kind === "string" ? Buffer.byteLength(object.v) : 0;
    const step = s.step ? this.eval(s.step, scope) : int(1);
    const neg = step.kind === "int" && step.v < 0;
    const start = s.start ? this.eval(s.start, scope) : int(neg ? size - 1 : 0);
    const stop = s.stop ? this.eval(s.stop, scope) : int(neg ? -1 : size);
    return this.call(this.builtin("slice", object, false), [start, stop, step], "slice");
  }

  private forLoop(node: NodeOf<"For">, ctx: Scope): JValue {
    const scope = new Scope(ctx);
    const iterNode = node.iterable.type === "SelectExpression" ? node.iterable.lhs : node.iterable;
    const testNode = node.iterable.type === "SelectExpression" ? node.iterable.test : undefined;
    let iterable = this.eval(iterNode, scope);
    if (this.rt.stats) markUsed(iterable, false, "array_access");
    if (iterable.kind === "undefined") iterable = arr([]);
    if (iterable.kind !== "array" && iterable.kind !== "object")
      throw new TemplateRuntimeError(`Expected iterable or object type in for loop: got ${typeName(iterable)}`);
    const isObject = iterable.kind === "object";
    spendItems(iterable.kind === "object" ? iterable.entries.size : iterable.items.length);
    const items: JValue[] =
      iterable.kind === "object" ? [...iterable.entries.values()].map(([k, v]) => arr([k, v], true)) : [...iterable.items];
    if (this.rt.stats) markUsed(iterable, false, isObject ? "object_access" : "array_access");

    const bind = (target: Scope, item: JValue): void => {
      if (node.loopvar.type === "Identifier") {
        target.set(node.loopvar.value, isObject && item.kind === "array" ? item.items[0]! : item);
      } else if (node.loopvar.type === "TupleLiteral") {
        if (item.kind !== "array") throw new TemplateRuntimeError(`Cannot unpack non-iterable type: ${typeName(item)}`);
        const names = node.loopvar.value;
        if (names.length !== item.items.length)
          throw new TemplateRuntimeError(`Too ${names.length > item.items.length ? "few" : "many"} items to unpack`);
        names.forEach((n, j) => {
          if (n.type !== "Identifier") throw new TemplateRuntimeError(`Cannot unpack non-identifier type: ${n.type}`);
          target.set(n.value, item.items[j]!);
        });
      } else {
        throw new TemplateRuntimeError(`Invalid loop variable(s): ${node.loopvar.type}`);
      }
    };

    const kept: JValue[] = [];
    for (const item of items) {
      if (node.loopvar.type === "TupleLiteral" && item.kind !== "array")
        throw new TemplateRuntimeError(`Cannot unpack non-iterable type: ${typeName(item)}`);
      if (testNode) {
        const loopScope = new Scope(scope);
        bind(loopScope, item);
        if (!truthy(this.eval(testNode, loopScope))) continue;
      }
      kept.push(item);
    }

    const out = new MarkedBuilder();
    let noIteration = true;
    // a body that cannot read `loop` gets none (charged all the same); a probe always gets one
    const skipLoop = !this.rt.stats && this.program !== undefined && maxItems() >= LOOP_KEYS.length && !readsLoopObject(this.program, node);
    // a body that only reads members of `loop` gets one object, updated for each iteration
    const inPlace =
      !skipLoop && !this.rt.stats && this.program !== undefined && maxItems() >= LOOP_KEYS.length && !letsLoopObjectOut(this.program, node);
    let reused: LoopObject | undefined;
    for (let i = 0; i < kept.length; i++) {
      spend(LOOP_ITERATION_COST);
      if (skipLoop) spend(LOOP_OBJECT_COST);
      else if (inPlace) {
        spend(LOOP_OBJECT_COST);
        if (reused === undefined) reused = new LoopObject();
        reused.update(kept, i);
        scope.set("loop", reused.value);
      } else scope.set("loop", loopObject(kept, i, this.rt.stats));
      bind(scope, kept[i]!);
      try {
        for (const s of node.body) this.print(out, this.eval(s, scope), s);
      } catch (e) {
        if (e instanceof ContinueSignal) continue;
        if (e instanceof BreakSignal) break;
        throw e;
      }
      noIteration = false;
    }
    if (noIteration) {
      const d = this.block(node.defaultBlock, ctx);
      if (d.kind === "string") out.append(d.v, d.m);
    }
    const r = out.result();
    return str(r.v, r.m);
  }

  private set(node: NodeOf<"Set">, scope: Scope): void {
    const rhs = node.value ? this.eval(node.value, scope) : this.block(node.body, scope);
    const target = node.assignee;
    if (target.type === "Identifier") {
      scope.set(target.value, rhs);
    } else if (target.type === "TupleLiteral") {
      if (rhs.kind !== "array") throw new TemplateRuntimeError(`Cannot unpack non-iterable type in set: ${typeName(rhs)}`);
      if (rhs.items.length !== target.value.length)
        throw new TemplateRuntimeError(`Too ${target.value.length > rhs.items.length ? "few" : "many"} items to unpack in set`);
      target.value.forEach((n, i) => {
        if (n.type !== "Identifier") throw new TemplateRuntimeError(`Cannot unpack to non-identifier in set: ${n.type}`);
        scope.set(n.value, rhs.items[i]!);
      });
    } else if (target.type === "MemberExpression") {
      if (target.computed) throw new TemplateRuntimeError("Cannot assign to computed member");
      if (target.property.type !== "Identifier") throw new TemplateRuntimeError("Cannot assign to member with non-identifier property");
      const o = this.eval(target.object, scope);
      if (o.kind !== "object") throw new TemplateRuntimeError("Cannot assign to member of non-object");
      noteChange();
      objSet(o, str(target.property.value), rhs);
    } else {
      throw new TemplateRuntimeError(`Invalid LHS inside assignment expression: ${target.type}`);
    }
  }

  /** bind_parameters: positional or keyword by name; defaults evaluated in the caller's scope. */
  private bindParams(name: string, params: readonly Node[], args: readonly JValue[], callerScope: Scope, target: Scope): void {
    for (let i = 0; i < params.length; i++) {
      const p = params[i]!;
      if (i < args.length) {
        if (p.type === "Identifier") target.set(p.value, argumentFor(args, p.value, i));
        else if (p.type === "KeywordArgumentExpression") target.set(p.key.value, argumentFor(args, p.key.value, i));
        else throw new TemplateRuntimeError(`Invalid parameter type in '${name}'`);
      } else if (p.type === "KeywordArgumentExpression") {
        target.set(p.key.value, this.eval(p.value, callerScope));
      } else {
        throw new TemplateRuntimeError(`Not enough arguments provided to '${name}'`);
      }
    }
  }

  private macro(node: NodeOf<"Macro">, scope: Scope): void {
    const name = node.name.value;
    // like the reference, the body runs in a copy of the CALLER's scope (dynamic scoping)
    const fn = (a: FuncArgs & { scope?: Scope }): JValue => {
      spend(CALL_COST);
      const caller = a.scope ?? scope;
      const macroScope = new Scope(caller);
      this.bindParams(name, node.args, a.args, caller, macroScope);
      return this.block(node.body, macroScope);
    };
    scope.set(name, { kind: "func", name, fn: (a) => fn({ name: a.name, args: a.args, rt: a.rt, scope: this.currentScope ?? scope }) });
  }

  /** The scope of the call expression being evaluated; macros read it to see the caller's variables. */
  private currentScope: Scope | undefined;

  private callStatement(node: NodeOf<"CallStatement">, scope: Scope): JValue {
    if (node.call.type !== "CallExpression") throw new TemplateRuntimeError("Call statement requires a valid call expression");
    const callee = this.eval(node.call.callee, scope);
    if (callee.kind !== "func") throw new TemplateRuntimeError(`Callee is not a function: got ${typeName(callee)}`);
    const callerScope = new Scope(scope);
    const callerFn = func("caller", (a) => {
      spend(CALL_COST);
      const blockScope = new Scope(callerScope);
      this.bindParams("caller", node.callerArgs ?? [], a.args, callerScope, blockScope);
      return this.block(node.body, blockScope);
    });
    const callScope = new Scope(scope);
    callScope.set("caller", callerFn);
    const args = node.call.args.map((a) => this.argument(a, scope));
    return this.withScope(callScope, () => this.call(callee, args, "call block"));
  }

  private withScope<T>(s: Scope, f: () => T): T {
    const prev = this.currentScope;
    this.currentScope = s;
    try {
      return f();
    } finally {
      this.currentScope = prev;
    }
  }
}
