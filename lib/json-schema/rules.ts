/**
 * The rule store behind every GBNF text this module produces, and the fixed rules it draws on.
 * Naming, de-duplication and ordering follow llama.cpp's `common_schema_converter` so that the
 * text is byte-identical: names are sanitized, a name reused with a different body gets the first
 * free numeric suffix (`foo0`, `foo1`, ...), the same body under the same name is shared, and the
 * grammar lists rules sorted by name.
 */
import { canonicalJsonBody, type JsonWhitespace } from "./layout.js";
import { internalError } from "../errors.js";
import { sanitizeRuleName } from "./literal.js";

export const SPACE_RULE = '| " " | "\\n"{1,2} [ \\t]{0,20}';

export interface BuiltinRule {
  readonly content: string;
  readonly deps: readonly string[];
}

export const PRIMITIVE_RULES: ReadonlyMap<string, BuiltinRule> = new Map([
  ["boolean", { content: '("true" | "false")', deps: [] }],
  ["decimal-part", { content: "[0-9]{1,16}", deps: [] }],
  ["integral-part", { content: "[0] | [1-9] [0-9]{0,15}", deps: [] }],
  [
    "number",
    {
      content: '("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?',
      deps: ["integral-part", "decimal-part"],
    },
  ],
  ["integer", { content: '("-"? integral-part)', deps: ["integral-part"] }],
  [
    "value",
    { content: "object | array | string | number | boolean | null", deps: ["object", "array", "string", "number", "boolean", "null"] },
  ],
  [
    "object",
    { content: '"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"', deps: ["string", "value"] },
  ],
  ["array", { content: '"[" space ( value ("," space value)* )? space "]"', deps: ["value"] }],
  [
    "uuid",
    {
      content:
        '"\\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\\""',
      deps: [],
    },
  ],
  ["char", { content: '[^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\bfnrt] | "u" [0-9a-fA-F]{4})', deps: [] }],
  ["string", { content: '"\\"" char* "\\""', deps: ["char"] }],
  ["null", { content: '"null"', deps: [] }],
]);

export const STRING_FORMAT_RULES: ReadonlyMap<string, BuiltinRule> = new Map([
  ["date", { content: '[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )', deps: [] }],
  [
    "time",
    {
      content:
        '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )',
      deps: [],
    },
  ],
  ["date-time", { content: 'date "T" time', deps: ["date", "time"] }],
  ["date-string", { content: '"\\"" date "\\""', deps: ["date"] }],
  ["time-string", { content: '"\\"" time "\\""', deps: ["time"] }],
  ["date-time-string", { content: '"\\"" date-time "\\""', deps: ["date-time"] }],
]);

/**
 * The default mode's replacements (docs/json-schema.md, "Default mode"): numbers as RFC 8259 has
 * them (any count of digits, exponents with leading zeros: `1.256e-06`), and a string character
 * that is any JSON string character (DEL raw, `\/`), where the reference bounds digits at 16 and
 * refuses both.
 */
export const DEFAULT_MODE_RULES: ReadonlyMap<string, BuiltinRule> = new Map([
  ["decimal-part", { content: "[0-9]+", deps: [] }],
  ["integral-part", { content: "[0] | [1-9] [0-9]*", deps: [] }],
  [
    "number",
    {
      content: '("-"? integral-part) ("." decimal-part)? ([eE] [-+]? [0-9]+)?',
      deps: ["integral-part", "decimal-part"],
    },
  ],
  ["char", { content: '[^"\\\\\\x00-\\x1F] | [\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})', deps: [] }],
]);

/** The built-in rule `name` of a mode. */
export function builtinRule(name: string, reference: boolean): BuiltinRule {
  const rule = (reference ? undefined : DEFAULT_MODE_RULES.get(name)) ?? PRIMITIVE_RULES.get(name) ?? STRING_FORMAT_RULES.get(name);
  if (rule === undefined) throw internalError(`unknown built-in rule ${name}`);
  return rule;
}

const RESERVED_NAMES = new Set(["root", ...PRIMITIVE_RULES.keys(), ...STRING_FORMAT_RULES.keys()]);

/** Names a schema may not claim for itself (a trailing `-` is added instead). */
export function isReservedName(name: string): boolean {
  return RESERVED_NAMES.has(name);
}

/** `Infinity` stands for "no upper bound". */
export function buildRepetition(item: string, min: number, max: number, separator = ""): string {
  const hasMax = max !== Infinity;
  if (max === 0) return "";
  if (min === 0 && max === 1) return `${item}?`;
  if (separator === "") {
    if (min === 1 && !hasMax) return `${item}+`;
    if (min === 0 && !hasMax) return `${item}*`;
    return `${item}{${min},${hasMax ? max : ""}}`;
  }
  const rest = buildRepetition(`(${separator} ${item})`, min === 0 ? 0 : min - 1, hasMax ? max - 1 : max);
  const result = `${item} ${rest}`;
  return min === 0 ? `(${result})?` : result;
}

/**
 * The largest count one `{m,n}` may carry: llama.cpp's parser refuses a repetition whose count
 * times the rules repeated reaches 2,000 (MAX_REPETITION_THRESHOLD), and reads a larger maximum
 * as none.
 */
const BLOCK = 1999;

/** Adds a rule with this body and returns its name (blocks are rules: a group would multiply the count). */
export type BlockRule = (body: string) => string;

/** `item` exactly `n` times, in blocks of BLOCK where `n` is larger ("" for none). */
function exactly(item: string, n: number, block: BlockRule): string {
  if (n <= BLOCK) return n === 0 ? "" : n === 1 ? item : `${item}{${n}}`;
  return [exactly(block(`${item}{${BLOCK}}`), Math.floor(n / BLOCK), block), exactly(item, n % BLOCK, block)].filter((x) => x !== "").join(" ");
}

/**
 * `item` 0..n times for any n. Above the parser's limit, as blocks B = item{K}: with n = qK + r,
 * `B{0,q-1} item{0,K-1} | B{q} item{0,r}`. The alternatives cover counts below qK and from qK on,
 * and within each a count splits into blocks one way only, so the grammar stays unambiguous (a
 * few parse stacks, not one per split).
 */
function upTo(item: string, n: number, block: BlockRule): string {
  if (n <= BLOCK) return buildRepetition(item, 0, n);
  const b = block(`${item}{${BLOCK}}`);
  const q = Math.floor(n / BLOCK);
  const seq = (...parts: string[]): string => parts.filter((x) => x !== "").join(" ") || '""';
  return `(${seq(upTo(b, q - 1, block), buildRepetition(item, 0, BLOCK - 1))} | ${seq(exactly(b, q, block), buildRepetition(item, 0, n % BLOCK))})`;
}

/**
 * {@link buildRepetition} without a separator, for any counts (default mode: a count the grammar
 * parser cannot take in one `{m,n}` is composed of blocks rather than refused).
 */
export function longRepetition(item: string, min: number, max: number, block: BlockRule): string {
  if (min <= BLOCK && (max === Infinity || max <= BLOCK)) return buildRepetition(item, min, max);
  if (max === Infinity) return [exactly(item, min, block), `${item}*`].join(" ");
  return [exactly(item, min, block), upTo(item, max - min, block)].filter((x) => x !== "").join(" ") || '""';
}

export class RuleSet {
  private readonly rules = new Map<string, string>();
  private readonly added: string[] = [];

  /**
   * `reference`: llama.cpp's built-in rules; otherwise the default mode's ({@link DEFAULT_MODE_RULES}).
   * `jsonWhitespace` "canonical": the bodies added (not `raw`) have their `space` laid out (layout.ts).
   */
  constructor(
    readonly reference = true,
    readonly jsonWhitespace: JsonWhitespace = "flexible",
  ) {
    this.rules.set("space", SPACE_RULE);
  }

  has(name: string): boolean {
    return this.rules.has(name);
  }

  get(name: string): string | undefined {
    return this.rules.get(name);
  }

  /** Store `body` under (a sanitized, possibly suffixed) `name`; returns the name used. `raw`: a
   * hand-written rule (the chat layer's), whose whitespace is its own. */
  add(name: string, body: string, raw = false): string {
    if (!raw && this.jsonWhitespace === "canonical") body = canonicalJsonBody(body);
    const base = sanitizeRuleName(name);
    const existing = this.rules.get(base);
    if (existing === undefined || existing === body) {
      this.put(base, body);
      return base;
    }
    let i = 0;
    for (;;) {
      const taken = this.rules.get(base + i);
      if (taken === undefined || taken === body) break;
      i++;
    }
    this.put(base + i, body);
    return base + i;
  }

  /** Rules are only ever added (a name never changes body), so an undo is deleting the new names. */
  private put(name: string, body: string): void {
    if (!this.rules.has(name)) this.added.push(name);
    this.rules.set(name, body);
  }

  /** Add a built-in rule and, unless already present, the built-ins it uses. */
  addPrimitive(name: string, rule: BuiltinRule): string {
    const used = this.add(name, rule.content);
    for (const dep of rule.deps) {
      if (!this.rules.has(dep)) this.addPrimitive(dep, builtinRule(dep, this.reference));
    }
    return used;
  }

  /** A mark to {@link restore} to (constant time: a copy of the rules per pattern was quadratic). */
  snapshot(): number {
    return this.added.length;
  }

  /** Remove every rule added since the mark. */
  restore(mark: number): void {
    while (this.added.length > mark) this.rules.delete(this.added.pop()!);
  }

  /** The grammar text: one `name ::= body` line per rule, sorted by name (byte order). */
  format(): string {
    // the default order is by UTF-16 code units, as `<` compares (and without a comparator call)
    const names = [...this.rules.keys()].sort();
    return names.map((n) => `${n} ::= ${this.rules.get(n)}\n`).join("");
  }
}
