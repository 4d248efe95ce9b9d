/**
 * Interpreter of the harness's builder-expression language (test/support/README.md, "Builder
 * expressions") over our TypeScript builder. It makes the same builder calls in the same order as the
 * C++ interpreter in test/native/peg_expr.cpp, so both arenas come out node for node identical.
 *
 * The chat helpers of `common_chat_peg_builder` that are plain compositions (tag helpers, permute,
 * optspace, tag_with_safe_content, prefix) are composed here from builder calls; the tool-syntax
 * generators (standard_json_tools, ...) belong to the chat layer and are not interpreted.
 */
import { type PegArena, type PegBuilder, type PegParser, pegBuilder } from "../../lib/peg/index.js";

export type PegExpr = string | [string, ...unknown[]];

const TAGS: Record<string, [tag: string, atomic: boolean]> = {
  reasoning_block: ["reasoning-block", false],
  reasoning: ["reasoning", false],
  content: ["content", false],
  tool: ["tool", false],
  tool_open: ["tool-open", true],
  tool_close: ["tool-close", true],
  tool_id: ["tool-id", true],
  tool_name: ["tool-name", true],
  tool_args: ["tool-args", false],
  tool_arg: ["tool-arg", false],
  tool_arg_open: ["tool-arg-open", true],
  tool_arg_close: ["tool-arg-close", true],
  tool_arg_name: ["tool-arg-name", true],
  tool_arg_value: ["tool-arg-value", false],
  tool_arg_string_value: ["tool-arg-string-value", false],
  tool_arg_json_value: ["tool-arg-value", false],
};

const MAX_PERMUTE = 6;

class ExprEvaluator {
  private readonly env: Array<[string, number]> = [];
  constructor(private readonly p: PegBuilder) {}

  eval(e: unknown): PegParser {
    if (typeof e === "string") return this.p.literal(e);
    if (!Array.isArray(e) || e.length === 0 || typeof e[0] !== "string") {
      throw new Error(`peg expression must be a string or an array starting with a name, got ${JSON.stringify(e)}`);
    }
    return this.form(e[0], e);
  }

  private str(e: unknown[], i: number): string {
    const v = e[i];
    if (typeof v !== "string") throw new Error(`peg expression '${String(e[0])}': argument ${i} must be a string`);
    return v;
  }

  private int(e: unknown[], i: number, def: number): number {
    if (i >= e.length) return def;
    const v = e[i];
    if (typeof v !== "number" || !Number.isInteger(v)) throw new Error(`peg expression '${String(e[0])}': argument ${i} must be an integer`);
    return v;
  }

  private bool(e: unknown[], i: number, def: boolean): boolean {
    if (i >= e.length) return def;
    const v = e[i];
    if (typeof v !== "boolean") throw new Error(`peg expression '${String(e[0])}': argument ${i} must be a boolean`);
    return v;
  }

  private strings(e: unknown[], i: number): string[] {
    const v = e[i];
    if (typeof v === "string") return [v];
    if (!Array.isArray(v)) throw new Error(`peg expression '${String(e[0])}': argument ${i} must be an array of strings`);
    return v as string[];
  }

  private op(op: string, a: PegParser, b: PegParser | string): PegParser {
    if (op === "+") return a.then(b);
    if (op === "|") return a.or(b);
    return a.spaced(b);
  }

  /** `"s" OP parser`: the C++ free operators create the literal after the parser operand. */
  private opStringFirst(op: string, s: string, b: PegParser): PegParser {
    return this.op(op, this.p.literal(s), b);
  }

  private operator(op: string, e: unknown[]): PegParser {
    if (e.length < 3) throw new Error(`peg operator '${op}' needs at least 2 operands`);
    const [, first, second] = e;
    let acc: PegParser;
    if (typeof first === "string" && typeof second === "string") throw new Error(`peg operator '${op}': the first two operands cannot both be strings`);
    if (typeof first === "string") {
      acc = this.opStringFirst(op, first, this.eval(second));
    } else {
      const lhs = this.eval(first);
      acc = typeof second === "string" ? this.op(op, lhs, second) : this.op(op, lhs, this.eval(second));
    }
    for (let i = 3; i < e.length; i++) {
      const next = e[i];
      acc = typeof next === "string" ? this.op(op, acc, next) : this.op(op, acc, this.eval(next));
    }
    return acc;
  }

  private form(op: string, e: unknown[]): PegParser {
    const p = this.p;
    switch (op) {
      case "let": {
        const depth = this.env.length;
        for (const b of e[1] as Array<[string, unknown]>) this.env.push([b[0], this.eval(b[1]).id]);
        const r = this.eval(e[2]);
        this.env.length = depth;
        return r;
      }
      case "var": {
        const name = this.str(e, 1);
        for (let i = this.env.length - 1; i >= 0; i--) if (this.env[i]![0] === name) return p.wrap(this.env[i]![1]);
        throw new Error(`peg expression 'var': unbound name '${name}'`);
      }
      case "+":
      case "|":
      case "<<":
        return this.operator(op, e);
      case "eps":
        return p.eps();
      case "start":
        return p.start();
      case "end":
        return p.end();
      case "any":
        return p.any();
      case "space":
        return p.space();
      case "rest":
        return p.rest();
      case "lit":
      case "literal":
        return p.literal(this.str(e, 1));
      case "chars":
        return p.chars(this.str(e, 1), this.int(e, 2, 1), this.int(e, 3, -1));
      case "until":
        return p.until(this.str(e, 1));
      case "until_one_of":
        return p.untilOneOf(this.strings(e, 1));
      case "string_content":
        return p.stringContent(this.str(e, 1));
      case "ref":
        return p.ref(this.str(e, 1));
      case "seq":
      case "sequence":
        return e.length === 1 ? p.sequence() : p.sequence(e.slice(1).map((x) => this.eval(x)));
      case "choice":
        return e.length === 1 ? p.choice() : p.choice(e.slice(1).map((x) => this.eval(x)));
      case "repeat": {
        const child = this.eval(e[1]);
        return e.length === 3 ? p.repeat(child, this.int(e, 2, 0)) : p.repeat(child, this.int(e, 2, 0), this.int(e, 3, -1));
      }
      case "opt":
      case "optional":
        return p.optional(this.eval(e[1]));
      case "star":
      case "zero_or_more":
        return p.zeroOrMore(this.eval(e[1]));
      case "plus":
      case "one_or_more":
        return p.oneOrMore(this.eval(e[1]));
      case "peek":
        return p.peek(this.eval(e[1]));
      case "not":
      case "negate":
        return p.negate(this.eval(e[1]));
      case "atomic":
        return p.atomic(this.eval(e[1]));
      case "tag": {
        const tag = this.str(e, 1);
        return p.tag(tag, this.eval(e[2]));
      }
      case "rule":
      case "trigger_rule": {
        const name = this.str(e, 1);
        const child = this.eval(e[2]);
        return p.rule(name, child, op === "trigger_rule" || this.bool(e, 3, false));
      }
      case "rule_fn":
      case "trigger_rule_fn": {
        const name = this.str(e, 1);
        const trigger = op === "trigger_rule_fn" || this.bool(e, 3, false);
        return p.rule(name, () => this.eval(e[2]), trigger);
      }
      case "schema": {
        const child = this.eval(e[1]);
        return p.schema(child, this.str(e, 2), e[3], this.bool(e, 4, false));
      }
      case "gbnf": {
        const child = this.eval(e[1]);
        return p.gbnf(child, this.str(e, 2));
      }
      case "ac": {
        const child = this.eval(e[1]);
        return p.ac(child, this.strings(e, 2));
      }
      case "double_quoted_string":
        return p.doubleQuotedString();
      case "single_quoted_string":
        return p.singleQuotedString();
      case "quoted_string":
        return p.quotedString();
      case "json":
        return p.json();
      case "json_object":
        return p.jsonObject();
      case "json_string":
        return p.jsonString();
      case "json_array":
        return p.jsonArray();
      case "json_number":
        return p.jsonNumber();
      case "json_bool":
        return p.jsonBool();
      case "json_null":
        return p.jsonNull();
      case "json_member": {
        const key = this.str(e, 1);
        return p.jsonMember(key, this.eval(e[2]));
      }
      case "python_value":
        return p.pythonValue();
      case "python_dict":
        return p.pythonDict();
      case "python_string":
        return p.pythonString();
      case "python_array":
        return p.pythonArray();
      case "python_number":
        return p.pythonNumber();
      case "python_bool":
        return p.pythonBool();
      case "python_null":
        return p.pythonNull();
      case "marker":
        return p.marker();
      case "prefix":
        return p.prefix(this.str(e, 1), e.length > 2 ? this.str(e, 2) : "");
      case "tag_with_safe_content":
        return this.tagWithSafeContent(this.str(e, 1), this.str(e, 2), this.eval(e[3]));
      case "permute":
        return this.permute(this.str(e, 1), (e[2] as unknown[]).map((x) => this.eval(x)));
      case "optspace":
        return this.optspace(this.str(e, 1));
      default: {
        const t = TAGS[op];
        if (t !== undefined) {
          const child = this.eval(e[1]);
          const tagged = p.tag(t[0], child);
          return t[1] ? p.atomic(tagged) : tagged;
        }
        throw new Error(`peg expression '${op}' is not interpreted in TypeScript`);
      }
    }
  }

  private tagWithSafeContent(tagName: string, marker: string, inner: PegParser): PegParser {
    const p = this.p;
    if (marker === "") return p.zeroOrMore(p.choice([inner, p.rule(tagName, p.tag("content", p.any()))]));
    // `negate(literal(m)) + any() + until(m)`: the compiled reference evaluates + operands right to left
    const until = p.until(marker);
    const any = p.any();
    const notMarker = p.negate(p.literal(marker));
    const chunk = p.rule(tagName, p.tag("content", notMarker.then(any).then(until)));
    return p.zeroOrMore(p.choice([inner, chunk]));
  }

  private permute(prefix: string, parsers: PegParser[]): PegParser {
    const p = this.p;
    if (parsers.length === 0) return p.eps();
    if (parsers.length === 1 || parsers.length > MAX_PERMUTE) return p.sequence(parsers);
    const rules = new Map<number, PegParser>();
    const remainingOf = (remaining: number): PegParser => {
      if (remaining === 0) return p.eps();
      const cached = rules.get(remaining);
      if (cached !== undefined) return cached;
      let alternatives = p.choice();
      for (let i = 0; i < parsers.length; i++) {
        const bit = 1 << i;
        if (remaining & bit) {
          const rest = remainingOf(remaining & ~bit);
          alternatives = p.choice([alternatives, p.sequence([parsers[i]!, rest])]);
        }
      }
      const r = p.rule(`${prefix}-${remaining}`, alternatives);
      rules.set(remaining, r);
      return r;
    };
    return remainingOf((1 << parsers.length) - 1);
  }

  private optspace(tag: string): PegParser {
    const p = this.p;
    const isSpace = (c: string): boolean => c === " " || (c >= "\t" && c <= "\r");
    let parser = p.eps();
    let endPrefix = tag.length;
    let startSuffix = tag.length;
    for (let i = 0; i < tag.length; i++) {
      if (!isSpace(tag[i]!)) {
        endPrefix = i;
        break;
      }
    }
    for (let i = tag.length; i > 0; i--) {
      if (!isSpace(tag[i - 1]!)) {
        startSuffix = i;
        break;
      }
    }
    for (let i = 0; i < endPrefix; i++) parser = p.sequence([parser, p.optional(p.literal(tag[i]!))]);
    parser = p.sequence([parser, p.literal(tag.slice(endPrefix, startSuffix))]);
    for (let i = startSuffix; i < tag.length; i++) parser = p.sequence([parser, p.optional(p.literal(tag[i]!))]);
    return parser;
  }
}

/** Builds an arena from a builder expression, exactly as the harness's `peg.build` does. */
export function buildFromExpr(expr: unknown): PegArena {
  const b = pegBuilder();
  const ev = new ExprEvaluator(b);
  b.setRoot(ev.eval(expr));
  return b.build();
}
