/**
 * Normalized schema -> GBNF rules, named and shaped exactly as llama.cpp's converter names and
 * shapes them (rule `root` for the top level, `<parent>-<property>`, `-item`, `-tuple-N`,
 * `alternative-N`, `ref-<pointer>`, shared built-ins such as `string`, `value`, `char`).
 */
import { LlamapegError, assertNever } from "../errors.js";
import { integerRangeRule } from "./integer-range.js";
import { gbnfFormatLiteral, jsonDump, sanitizeRuleName } from "./literal.js";
import { Normalizer, type Property, type SchemaNode } from "./normalize.js";

type ObjectNode = Extract<SchemaNode, { kind: "object" }>;

/** Longest end of a declared name written as shared suffix rules (a longer one is written inline). */
const MAX_SHARED_REST = 128;
/** Longest object path its position rules are named under (longer ones: `o<N>-...`). */
const MAX_OBJECT_PREFIX = 12;
/** Most declared properties an object may have for `propertyOrder: "any"` (2^n states). */
const MAX_ANY_ORDER = 5;
/** Past MAX_ANY_ORDER, most required properties `propertyOrder: "any"` tracks (2^r states). */
const MAX_ANY_REQUIRED = 6;
/** Most rules counting a closed object's members may take there (members x states of the required ones). */
const MAX_COUNTED_STATES = 1024;

function popCount(x: number): number {
  let n = 0;
  for (; x !== 0; x &= x - 1) n++;
  return n;
}
import { DefaultNormalizer } from "./normalize-default.js";
import { dfaStringRule, dfaTextRule, jsonStringLiteral } from "./regex-gbnf.js";
import { LengthsBesidePattern, regexStringRule } from "./regex-gbnf.js";
import { InvalidPattern, UnsupportedPattern, patternToRule } from "./pattern.js";
import type { RefTable } from "./refs.js";
import type { Reporter } from "./report.js";
import { STRING_FORMAT_RULES, buildRepetition, builtinRule, isReservedName, longRepetition, type BlockRule, type RuleSet } from "./rules.js";

const join = (parent: string, child: string): string => (parent === "" ? child : `${parent}-${child}`);

/** `[prefix..., rest...]` with min..max items in all (default mode). */
function itemsRule(prefix: string[], rest: string | null, min: number, max: number, block: BlockRule): string {
  // items 0..k-1 from the prefix (each one present only when the one before is), then rest
  const k = prefix.length;
  const tail = (from: number): string => {
    // items from index `from` on, given `from` items already written (from >= 1)
    if (from >= max) return "";
    if (from < k) {
      const more = tail(from + 1);
      const piece = `"," space ${prefix[from]}${more === "" ? "" : ` ${more}`}`;
      return from < min ? piece : `(${piece})?`;
    }
    if (rest === null || max <= from) return "";
    const lo = Math.max(0, min - from);
    const hi = max === Infinity ? Infinity : max - from;
    return longRepetition(`("," space ${rest})`, lo, hi, block);
  };
  let body: string;
  if (k > 0) body = `${prefix[0]}${tail(1) === "" ? "" : ` ${tail(1)}`}`;
  else if (rest === null || max === 0) body = "";
  else body = `${rest}${tail(1) === "" ? "" : ` ${tail(1)}`}`;
  if (body === "") return '"[" space "]"';
  if (min > 0) return `"[" space ${body} space "]"`;
  // a count composed of blocks generates more rules than a group may repeat (even `?`): a rule of its own
  return `"[" space ${max !== Infinity && max > 1999 ? `${block(body)}?` : `(${body})?`} space "]"`;
}

export class Emitter {
  private readonly normalizer: Normalizer;
  private readonly refNodes = new Map<string, SchemaNode>();
  private readonly resolving = new Set<string>();
  /** Default mode: each `$ref` and its rule name (short, unique; the pointer's last segment). */
  private readonly refNames = new Map<string, string>();
  private readonly refNamesTaken = new Set<string>();
  /** Default mode: the rule written for each suffix ending a declared name (notStrings), by its text. */
  private readonly keyRests = new Map<string, string>();
  /** Objects whose rules took a short prefix `o<N>` so far. */
  private shortObjects = 0;

  /**
   * `":" space`, `"," space`, `"{" space`, `space "}"` as the bodies of the default mode's objects
   * write them: laid out already where the layout is canonical, so those bodies (most of a large
   * grammar) skip that pass (layout.ts).
   */
  private readonly colon: string;
  private readonly comma: string;
  private readonly open: string;
  private readonly close: string;

  constructor(
    readonly rules: RuleSet,
    private readonly refs: RefTable,
    private readonly report: Reporter,
    private readonly dotall: boolean,
    private readonly propertyOrder: "declared" | "any" = "declared",
  ) {
    this.normalizer = rules.reference ? new Normalizer(refs, report) : new DefaultNormalizer(refs, report, dotall);
    const laidOut = !rules.reference && rules.jsonWhitespace === "canonical";
    this.colon = laidOut ? '": "' : 'space ":" space';
    this.comma = laidOut ? '", "' : '"," space';
    this.open = laidOut ? '"{"' : '"{" space';
    this.close = laidOut ? '"}"' : 'space "}"';
  }

  private builtin(name: string) {
    return builtinRule(name, this.rules.reference);
  }

  /** Normalize `schema` and add its rules; `name` "" means the root. Returns the rule name. */
  addSchema(name: string, schema: unknown): string {
    try {
      return this.visit(this.normalizer.normalize(schema, "#"), name);
    } catch (err) {
      // normalizing and emitting recurse with the schema's depth
      if (err instanceof RangeError) {
        throw new LlamapegError("ERR_SCHEMA_UNSUPPORTED", "the schema is nested too deeply to compile", { where: "#", cause: err });
      }
      throw err;
    }
  }

  visit(node: SchemaNode, name: string): string {
    const ruleName = isReservedName(name) ? `${name}-` : name === "" ? "root" : name;
    const rules = this.rules;
    switch (node.kind) {
      case "ref": {
        // a schema shared by the normalizer but met once is written where it stands
        const shared = this.normalizer.sharedNode(node.ref);
        if (shared?.once === true) return this.visit(shared.node, name);
        return rules.add(ruleName, this.resolveRef(node.ref));
      }
      case "union":
        return rules.add(
          ruleName,
          node.alternatives.map((alt, i) => this.visit(alt, name === "" ? `alternative-${i}` : `${name}-${i}`)).join(" | "),
        );
      case "const":
        if (!rules.reference) return rules.add(ruleName, this.valueLiteral(node.value));
        return rules.add(ruleName, gbnfFormatLiteral(jsonDump(node.value)));
      case "enum":
        if (!rules.reference) return rules.add(ruleName, `(${node.values.map((v) => this.valueLiteral(v)).join(" | ")})`);
        return rules.add(ruleName, `(${node.values.map((v) => gbnfFormatLiteral(jsonDump(v))).join(" | ")})`);
      case "object":
        if (!rules.reference) return rules.add(ruleName, this.orderedObjectRule(node, name));
        return rules.add(ruleName, this.objectRule(node.properties, node.required, name, node.additional));
      case "items": {
        const prefix = node.prefix.map((it, i) => this.visit(it, join(name, `tuple-${i}`)));
        const rest = node.rest === null ? null : this.visit(node.rest, join(name, "item"));
        return rules.add(ruleName, itemsRule(prefix, rest, node.min, node.max, (body) => rules.add(`${ruleName}-block`, body)));
      }
      case "regex":
        return this.regexRule(node.pattern, ruleName, node.where, node.minLength, node.maxLength);
      case "number-range":
        return rules.add(ruleName, node.rule);
      case "not-strings":
        return rules.add(ruleName, this.notStrings(node.values));
      case "number-dfa":
        return dfaTextRule(node.dfa, ruleName, rules);
      case "string-dfa":
        return dfaStringRule(node.dfa, ruleName, rules);
      case "never":
        // reached only where no enclosing object, array or union could drop it (the root, a $ref)
        this.report.unsupported(node.keyword, `the schema admits no value: ${node.reason}`, node.where);
        return rules.add(ruleName, rules.addPrimitive("value", this.builtin("value")));
      case "all-of":
        if (node.enumLiterals.length > 0) return rules.add(ruleName, `(${node.enumLiterals.join(" | ")})`);
        return rules.add(ruleName, this.objectRule(node.properties, node.required, name, null));
      case "tuple": {
        const items = node.items.map((it, i) => this.visit(it, join(name, `tuple-${i}`)));
        return rules.add(ruleName, `"[" space ${items.join(' "," space ')} space "]"`);
      }
      case "array": {
        const item = this.visit(node.item, join(name, "item"));
        return rules.add(ruleName, `"[" space ${buildRepetition(item, node.min, node.max, '"," space')} space "]"`);
      }
      case "pattern":
        return this.patternRule(node.pattern, ruleName, node.where);
      case "uuid":
        return rules.addPrimitive(ruleName === "root" ? "root" : node.format, this.builtin("uuid"));
      case "string-format": {
        const prim = `${node.format}-string`;
        return rules.add(ruleName, rules.addPrimitive(prim, STRING_FORMAT_RULES.get(prim)!));
      }
      case "string-length": {
        const char = rules.addPrimitive("char", this.builtin("char"));
        if (rules.reference) return rules.add(ruleName, `"\\"" ${buildRepetition(char, node.min, node.max)} "\\""`);
        // one rule per pair of bounds, named by them: the engine expands `char{0,N}` into N rules,
        // and a schema with forty strings of maxLength 2100 expanded each one (16 ms to create)
        const shared = `string-${node.min}-${node.max === Infinity ? "" : node.max}`.replace(/-$/, "-more");
        const chars = longRepetition(char, node.min, node.max, (body) => rules.add(`${shared}-block`, body));
        const used = rules.add(shared, `"\\"" ${chars} "\\""`);
        return ruleName === "root" ? rules.add(ruleName, used) : used;
      }
      case "integer-range":
        return rules.add(ruleName, integerRangeRule(node.min, node.max));
      case "any-object":
        return rules.add(ruleName, rules.addPrimitive("object", this.builtin("object")));
      case "any-value":
        return rules.add(ruleName, rules.addPrimitive("value", this.builtin("value")));
      case "primitive":
        return rules.addPrimitive(ruleName === "root" ? "root" : node.type, this.builtin(node.type));
      default:
        return assertNever(node, "schema node");
    }
  }

  /** A JSON value as GBNF that admits any whitespace layout and escaped spellings (default mode). */
  private valueLiteral(v: unknown): string {
    if (typeof v === "string") return jsonStringLiteral(v);
    if (typeof v === "number" && Number.isInteger(v) && Math.abs(v) < 2 ** 53) return `("${jsonDump(v)}" ("." "0"+)?)`;
    if (Array.isArray(v)) {
      if (v.length === 0) return '"[" space "]"';
      return `("[" space ${v.map((x) => this.valueLiteral(x)).join(' "," space ')} space "]")`;
    }
    if (typeof v === "object" && v !== null) {
      const entries = Object.entries(v);
      if (entries.length === 0) return '"{" space "}"';
      return `("{" space ${entries.map(([k, x]) => `${jsonStringLiteral(k)} space ":" space ${this.valueLiteral(x)}`).join(' "," space ')} space "}")`;
    }
    return gbnfFormatLiteral(jsonDump(v));
  }

  private regexRule(pattern: string, ruleName: string, where: string, minLength: number, maxLength: number): string {
    const snapshot = this.rules.snapshot();
    try {
      return regexStringRule(pattern, ruleName, this.rules, { dotall: this.dotall, minLength, maxLength });
    } catch (err) {
      this.rules.restore(snapshot);
      if (err instanceof LengthsBesidePattern) {
        // ignore mode: the lengths are left out, the pattern still holds
        this.report.unsupported("maxLength", `minLength/maxLength next to pattern ${JSON.stringify(pattern)} are not supported`, where.replace(/\/(pattern|format)$/, "/maxLength"));
        return this.regexRule(pattern, ruleName, where, 0, Infinity);
      }
      if (err instanceof InvalidPattern) {
        throw new LlamapegError("ERR_SCHEMA_INVALID", `invalid JSON schema at ${where}: invalid pattern ${JSON.stringify(pattern)}: ${err.message}`, { where });
      }
      if (!(err instanceof UnsupportedPattern)) throw err;
      this.report.unsupported("pattern", `pattern ${JSON.stringify(pattern)} is not supported (${err.message})`, where);
      return this.rules.add(ruleName, this.rules.addPrimitive("string", this.builtin("string")));
    }
  }

  /**
   * Default mode: `{...}` with the properties in declaration order, each optional one where it
   * stands, and other members (when allowed) anywhere between them. Two rules per property
   * position: `-pN` (nothing written yet) and `-qN` (something written: a comma first).
   */
  private orderedObjectRule(node: ObjectNode, name: string): string {
    const { properties, required } = node;
    const n = properties.length;
    // The position rules (and any order's state rules) name each member rule and each other: under
    // a long path, those names were most of a large grammar's text, and so of the time to build,
    // check and parse it. Such an object's rules are `o<N>-...` instead (its values keep their names).
    const short = sanitizeRuleName(name).length > MAX_OBJECT_PREFIX ? `o${this.shortObjects++}` : null;
    const prefix = short ?? name;
    const kv: string[] = properties.map(({ name: prop, schema }, i) => {
      // a property named "" of the root would name its value `root` (llama.cpp's converter does, and
      // its grammar then starts at that value): the reference mode keeps that, this one does not
      const valueRule = this.visit(schema, name === "" && prop === "" ? "empty-key" : join(name, prop));
      return this.rules.add(short === null ? join(name, `${prop}-kv`) : `${short}-k${i}`, `${jsonStringLiteral(prop)} ${this.colon} ${valueRule}`);
    });
    const extra = this.otherMembers(node, name, short === null ? undefined : `${short}-x`);
    if (extra === null && (node.minProperties !== undefined || node.maxProperties !== undefined)) {
      return this.countedObject(kv, properties.map((p) => required.has(p.name)), node.minProperties ?? 0, node.maxProperties ?? Infinity, prefix);
    }
    if (extra !== null && n === 0 && (node.maxProperties !== undefined || (node.minProperties ?? 0) > 1)) {
      // a map with a bounded count of members
      const min = node.minProperties ?? 0;
      const max = node.maxProperties ?? Infinity;
      if (max === 0) return '"{" space "}"';
      const body = `${extra} ${buildRepetition(`("," space ${extra})`, Math.max(0, min - 1), max - 1)}`.trim();
      return `"{" space ${min > 0 ? body : `(${body})?`} space "}"`;
    }
    if (this.propertyOrder === "any" && n > 1 && n <= MAX_ANY_ORDER && node.minProperties === undefined && node.maxProperties === undefined) {
      return this.anyOrderObject(kv, properties.map((p) => required.has(p.name)), extra, prefix);
    }
    if (this.propertyOrder === "any" && n > MAX_ANY_ORDER && node.minProperties === undefined && node.maxProperties === undefined) {
      const index = new Map(properties.map((p, i) => [p.name, i]));
      const listed = [...required].filter((r) => index.has(r)).map((r) => index.get(r)!);
      return this.anyOrderLargeObject(kv, listed, extra, prefix);
    }
    // minProperties 1 beside other members: the object is not empty
    const nonEmpty = (node.minProperties ?? 0) > 0;
    // the other members between two properties, as rules of their own: each property
    // position repeats them, and inline they made most of a large object's grammar
    const extras = extra === null ? "" : this.rules.add(join(prefix, "more"), `(${this.comma} ${extra})*`);
    // other members, or none, before the first property written: one rule with an empty branch
    // (each property position wrote its members twice, with and without them)
    const lead = extra === null ? "" : this.rules.add(join(prefix, "lead"), `${extra} ${extras} ${this.comma} | ""`);
    if (n === 0) return extra === null ? '"{" space "}"' : nonEmpty ? `"{" space ${extra} ${extras} space "}"` : `"{" space (${extra} ${extras})? space "}"`;
    // from the end back: after[i] = the rest from property i on once something was written
    // ("" = nothing may follow), first[i] = the same with nothing written yet: a rule, or "empty"
    // (only nothing), or "none" (nothing at all: the object may not be empty)
    const cat = (...parts: string[]): string => parts.filter((x) => x !== "").join(" ");
    let after = extras;
    let first: string = extra === null ? (nonEmpty ? "none" : "empty") : nonEmpty ? `${extra} ${extras}` : `(${extra} ${extras})?`;
    for (let i = n - 1; i >= 0; i--) {
      const isReq = required.has(properties[i]!.name);
      const a = cat(extras, `${this.comma} ${kv[i]}`, after);
      const f = cat(kv[i]!, after);
      const fx = extra === null ? f : `${lead} ${f}`;
      const afterBody = isReq ? a : after === "" ? `(${a})?` : `${a} | ${after}`;
      const afterRule = i === 0 ? "" : this.rules.add(join(prefix, `q${i}`), afterBody);
      let firstBody: string;
      if (isReq || first === "none") firstBody = fx;
      else if (first === "empty") firstBody = `(${fx})?`;
      else firstBody = `${fx} | ${first}`;
      first = this.rules.add(join(prefix, `p${i}`), firstBody);
      after = afterRule;
    }
    return `${this.open} ${first} ${this.close}`;
  }

  /**
   * Properties in any order (`propertyOrder: "any"`): one rule per set of properties written so
   * far (and whether anything was), each offering every property not yet written, another member,
   * or the end once the required ones are in; 2^n states, so only for small objects.
   */
  private anyOrderObject(kv: string[], isRequired: boolean[], extra: string | null, name: string): string {
    const n = kv.length;
    const needed = isRequired.reduce((m, r, i) => (r ? m | (1 << i) : m), 0);
    const base = sanitizeRuleName(name === "" ? "root" : name);
    for (let k = 0; ; k++) {
      const ruleOf = (mask: number, written: boolean): string => `${base}-o${k === 0 ? "" : `${k}-`}${mask}${written ? "w" : ""}`;
      const bodies = new Map<string, string>();
      for (let mask = 0; mask < 1 << n; mask++) {
        // (a state with something written but no property yet exists only beside other members)
        for (const written of mask !== 0 ? [true] : extra !== null ? [false, true] : [false]) {
          const sep = written ? `${this.comma} ` : "";
          const alts: string[] = [];
          for (let i = 0; i < n; i++) if (!(mask & (1 << i))) alts.push(`${sep}${kv[i]} ${ruleOf(mask | (1 << i), true)}`);
          if (extra !== null) alts.push(`${sep}${extra} ${ruleOf(mask, true)}`);
          if ((mask & needed) === needed) alts.push('""');
          bodies.set(ruleOf(mask, written), alts.length === 0 ? '""' : alts.join(" | "));
        }
      }
      // the state rules name each other: a prefix none of them clashes under
      if ([...bodies].some(([r, b]) => (this.rules.get(r) ?? b) !== b)) continue;
      for (const [r, b] of bodies) this.rules.add(r, b);
      return `${this.open} ${ruleOf(0, false)} ${this.close}`;
    }
  }

  /**
   * `propertyOrder: "any"` for an object of more than MAX_ANY_ORDER properties: members in any
   * order, one rule per set of required properties written so far (`required`: their indices in
   * `kv`, in the order the schema's `required` lists them). Which optional ones were written is not
   * tracked (2^n rules), so one may be written twice: JSON.parse and Python's json keep the last,
   * and each value is checked against its own schema. Past MAX_ANY_REQUIRED required ones (2^r
   * rules), those keep one order, the declared one or that of `required`, and the others go
   * anywhere. A closed object also counts its members, at most as many as it declares, where that
   * takes at most MAX_COUNTED_STATES rules: a model cannot write keys forever (docs/json-schema.md).
   */
  private anyOrderLargeObject(kv: string[], required: number[], extra: string | null, name: string): string {
    const base = sanitizeRuleName(name === "" ? "root" : name);
    const isRequired = new Set(required);
    const optional = kv.filter((_, i) => !isRequired.has(i));
    if (extra !== null) optional.push(extra);
    const r = required.length;
    // the required ones written: a set (bit mask over `required`), or a count along one of two orders
    const declared = [...required].sort((a, b) => a - b);
    const orders = r <= MAX_ANY_REQUIRED ? [] : declared.every((x, i) => x === required[i]) ? [declared] : [declared, required];
    const tracker =
      orders.length === 0
        ? {
            states: 1 << r,
            starts: [0],
            next: (mask: number): Array<[string, number]> => required.map((x, j) => [kv[x]!, mask | (1 << j)]),
            left: (mask: number): number => r - popCount(mask),
            name: (mask: number): string => String(mask),
          }
        : {
            states: orders.length * (r + 1),
            starts: orders.map((_, o) => o * (r + 1)),
            next: (id: number): Array<[string, number]> => {
              const i = id % (r + 1);
              return i < r ? [[kv[orders[Math.floor(id / (r + 1))]![i]!]!, id + 1]] : [];
            },
            left: (id: number): number => r - (id % (r + 1)),
            name: (id: number): string => `${id < r + 1 ? "d" : "r"}${id % (r + 1)}`,
          };
    const cap = extra === null && kv.length * tracker.states <= MAX_COUNTED_STATES ? kv.length : Infinity;
    for (let k = 0; ; k++) {
      const prefix = `${base}-u${k === 0 ? "" : `${k}-`}`;
      const bodies = new Map<string, string>();
      const opt = optional.length === 0 ? null : `${prefix}opt`;
      if (opt !== null) bodies.set(opt, optional.join(" | "));
      // the state after `count` members (uncounted: 0), from which the required ones can still come
      const stateName = (count: number, t: number): string => `${prefix}${cap === Infinity ? "" : `${count}-`}${tracker.name(t)}`;
      const moves = (count: number, t: number): Array<[string, string]> => {
        if (count >= cap) return [];
        const to = cap === Infinity ? 0 : count + 1;
        const out: Array<[string, number]> = opt === null ? [] : [[opt, t]];
        out.push(...tracker.next(t));
        return out.filter(([, t2]) => tracker.left(t2) <= cap - to).map(([member, t2]) => [member, stateName(to, t2)]);
      };
      // from the start, the first member; then the states it reaches, each offering ", " and a
      // member, or the end once the required ones are in
      const steps = (count: number, t: number): Array<[number, number]> => {
        if (count >= cap) return [];
        const to = cap === Infinity ? 0 : count + 1;
        const targets = opt === null ? tracker.next(t).map(([, t2]) => t2) : [t, ...tracker.next(t).map(([, t2]) => t2)];
        return targets.filter((t2) => tracker.left(t2) <= cap - to).map((t2) => [to, t2]);
      };
      const firsts = tracker.starts.flatMap((t) => moves(0, t).map(([member, state]) => `${member} ${state}`));
      const work = tracker.starts.flatMap((t) => steps(0, t));
      const seen = new Set<string>();
      for (let item = work.pop(); item !== undefined; item = work.pop()) {
        const [count, t] = item;
        const id = stateName(count, t);
        if (seen.has(id)) continue;
        seen.add(id);
        const alts = moves(count, t).map(([member, state]) => `"," space ${member} ${state}`);
        if (tracker.left(t) === 0) alts.push('""');
        bodies.set(id, alts.join(" | "));
        work.push(...steps(count, t));
      }
      bodies.set(`${prefix}first`, [...new Set(firsts)].join(" | "));
      // the state rules name each other: a prefix none of them clashes under
      if ([...bodies].some(([rule, b]) => (this.rules.get(rule) ?? b) !== b)) continue;
      for (const [rule, b] of bodies) this.rules.add(rule, b);
      return `"{" space ${r === 0 ? `(${prefix}first)?` : `${prefix}first`} space "}"`;
    }
  }

  /** The rule for one other member (`key: value`), or null when no other key may appear. */
  /** `kvName`: the rule's name, where not `<name>-additional-kv`. */
  private otherMembers(node: ObjectNode, name: string, kvName?: string): string | null {
    const sub = join(name, "additional");
    if (node.members !== undefined) {
      if (node.members.length === 0) return null;
      const alts = node.members.map((m, j) => {
        const suffix = j === 0 ? "" : String(j);
        const keyRule = dfaStringRule(m.keys, `${sub}-k${suffix}`, this.rules);
        const valueRule = m.value.kind === "any-value" ? this.rules.addPrimitive("value", this.builtin("value")) : this.visit(m.value, `${sub}-value${suffix}`);
        return `${keyRule} ${this.colon} ${valueRule}`;
      });
      return this.rules.add(kvName ?? `${sub}-kv`, alts.join(" | "));
    }
    const additional = node.additional;
    if (additional !== true && (typeof additional !== "object" || additional === null)) return null;
    const valueRule = additional === true ? this.rules.addPrimitive("value", this.builtin("value")) : this.visit(additional, `${sub}-value`);
    const names = [...node.properties.map((p) => p.name), ...(node.forbidden ?? [])];
    const keyRule = names.length === 0 ? this.rules.addPrimitive("string", this.builtin("string")) : this.rules.add(`${sub}-k`, this.notStrings(names));
    return this.rules.add(kvName ?? `${sub}-kv`, `${keyRule} ${this.colon} ${valueRule}`);
  }

  /**
   * Declared properties only, with min..max of them present: one rule per (position, count
   * written so far), so the count is exact. The normalizer bounds the rule count.
   */
  private countedObject(kv: string[], isRequired: boolean[], min: number, max: number, name: string): string {
    const n = kv.length;
    const memo = new Map<string, string | null>();
    // the rest from property i with c written: a rule name, "" (only the end), or null (impossible)
    const rest = (i: number, c: number): string | null => {
      if (i === n) return c >= min ? "" : null;
      if (c + (n - i) < min) return null;
      const key = `${i},${c}`;
      if (memo.has(key)) return memo.get(key)!;
      const alts: string[] = [];
      if (c < max) {
        const r = rest(i + 1, c + 1);
        if (r !== null) alts.push([c > 0 ? '"," space' : "", kv[i]!, r].filter((x) => x !== "").join(" "));
      }
      if (!isRequired[i]) {
        const r = rest(i + 1, c);
        if (r !== null) alts.push(r === "" ? '""' : r);
      }
      const out = alts.length === 0 ? null : this.rules.add(join(name, `n${i}-${c}`), alts.join(" | "));
      memo.set(key, out);
      return out;
    };
    const body = rest(0, 0);
    if (body === null) throw new LlamapegError("ERR_SCHEMA_INVALID", `invalid JSON schema: minProperties/maxProperties leave no object`, { where: "#" });
    return `"{" space ${body} space "}"`;
  }

  private resolveRef(ref: string): string {
    const hash = ref.indexOf("#");
    const fragment = hash >= 0 ? ref.slice(hash + 1) : ref;
    let refName = `ref${fragment.replace(/[^a-zA-Z0-9-]+/g, "-")}`;
    if (!this.rules.reference && refName.length > 32) refName = this.shortRefName(ref, fragment);
    if (!this.rules.has(refName) && !this.resolving.has(ref)) {
      this.resolving.add(ref);
      refName = this.visit(this.refNode(ref), refName);
      this.resolving.delete(ref);
    }
    return refName;
  }

  /**
   * Default mode: a long pointer's rule gets the name of its last segment (`ref-PodSpec`, not
   * `ref-definitions-https-kubernetesjsonschema-dev-...-io-k8s-api-core-v1-PodSpec`): every rule
   * below it and every reference repeats the name, and grammar size is compile and parse time.
   */
  private shortRefName(ref: string, fragment: string): string {
    const known = this.refNames.get(ref);
    if (known !== undefined) return known;
    const last = fragment.split(/[/.#_]/).filter((x) => x !== "").pop() ?? "";
    const base = `ref-${last.replace(/[^a-zA-Z0-9-]+/g, "-").slice(-24)}`;
    let name = base;
    for (let i = 1; this.refNamesTaken.has(name) || this.rules.has(name); i++) name = `${base}-r${i}`;
    this.refNames.set(ref, name);
    this.refNamesTaken.add(name);
    return name;
  }

  private refNode(ref: string): SchemaNode {
    let node = this.refNodes.get(ref) ?? this.normalizer.sharedNode(ref)?.node;
    if (node === undefined) {
      const target = this.refs.get(ref);
      node = this.normalizer.normalize(target === undefined ? null : target.schema, target?.where ?? "#");
      this.refNodes.set(ref, node);
    }
    return node;
  }

  private patternRule(pattern: string, ruleName: string, where: string): string {
    const snapshot = this.rules.snapshot();
    try {
      return patternToRule(pattern, ruleName, this.rules, this.dotall);
    } catch (err) {
      this.rules.restore(snapshot);
      if (err instanceof InvalidPattern) {
        throw new LlamapegError("ERR_SCHEMA_INVALID", `invalid JSON schema at ${where}: invalid pattern ${JSON.stringify(pattern)}: ${err.message}`, {
          where,
        });
      }
      if (!(err instanceof UnsupportedPattern)) throw err;
      this.report.unsupported("pattern", `pattern ${JSON.stringify(pattern)} is not supported (${err.message}); it would accept any string`, where);
      return this.rules.add(ruleName, this.rules.addPrimitive("string", this.builtin("string")));
    }
  }

  /**
   * Reference mode: `{ required..., optional... }` with properties in declaration order: required ones in a row,
   * then the optional ones as a chain where each may start the rest (`a-rest`, `b-rest`...).
   */
  private objectRule(properties: Property[], required: ReadonlySet<string>, name: string, additional: SchemaNode | boolean | null): string {
    const requiredProps: string[] = [];
    const optionalProps: string[] = [];
    const kvRules = new Map<string, string>();
    for (const { name: prop, schema } of properties) {
      const valueRule = this.visit(schema, join(name, prop));
      kvRules.set(prop, this.rules.add(join(name, `${prop}-kv`), `${gbnfFormatLiteral(JSON.stringify(prop))} space ":" space ${valueRule}`));
      (required.has(prop) ? requiredProps : optionalProps).push(prop);
    }
    if (additional === true || (typeof additional === "object" && additional !== null)) {
      const sub = join(name, "additional");
      const valueRule =
        additional === true ? this.rules.addPrimitive("value", this.builtin("value")) : this.visit(additional, `${sub}-value`);
      const names = properties.map((p) => p.name);
      const keyRule =
        names.length === 0 ? this.rules.addPrimitive("string", this.builtin("string")) : this.rules.add(`${sub}-k`, this.notStrings(names));
      kvRules.set("*", this.rules.add(`${sub}-kv`, `${keyRule} ":" space ${valueRule}`));
      optionalProps.push("*");
    }
    if (requiredProps.length === 0 && optionalProps.length === 0) return '"{" space "}"';

    let rule = `"{" space ${requiredProps.map((p) => kvRules.get(p)!).join(' "," space ')}`;
    if (optionalProps.length > 0) {
      rule += " (";
      if (requiredProps.length > 0) rule += ' "," space ( ';
      // `chain(i)`: the optional keys from i on, the first one optional or not. The `k-rest` rule
      // after key i is the same from every start, so it is built once, from the last key back:
      // the order the reference's recursion adds them in (recursing per start was cubic: 2,000
      // optional properties took 12 s).
      const n = optionalProps.length;
      const piece = (i: number, firstOptional: boolean): string => {
        const k = optionalProps[i]!;
        const kv = kvRules.get(k)!;
        const commaKv = `( "," space ${kv} )`;
        return firstOptional ? commaKv + (k === "*" ? "*" : "?") : kv + (k === "*" ? ` ${commaKv}*` : "");
      };
      const rest: string[] = new Array(n);
      for (let i = n - 1; i >= 1; i--) {
        rest[i] = this.rules.add(join(name, `${optionalProps[i - 1]}-rest`), piece(i, true) + (i + 1 < n ? ` ${rest[i + 1]}` : ""));
      }
      const chain = (i: number): string => piece(i, false) + (i + 1 < n ? ` ${rest[i + 1]}` : "");
      rule += optionalProps.map((_, i) => chain(i)).join(" | ");
      if (requiredProps.length > 0) rule += " )";
      rule += " )?";
    }
    return `${rule} space "}"`;
  }

  /**
   * A JSON string that is none of `strings`, as a trie of character classes. Characters are
   * whole code points (the reference works on bytes).
   */
  private notStrings(strings: string[]): string {
    interface Trie {
      children: Map<string, Trie>;
      end: boolean;
    }
    const root: Trie = { children: new Map(), end: false };
    for (const s of strings) {
      let node = root;
      for (const ch of s) {
        let next = node.children.get(ch);
        if (next === undefined) node.children.set(ch, (next = { children: new Map(), end: false }));
        node = next;
      }
      node.end = true;
    }
    const char = this.rules.addPrimitive("char", this.builtin("char"));
    // Escape only where the reference's raw character breaks the class, so the text stays the
    // reference's otherwise: `\` and `]` anywhere, `^` alone (`[^]`), `-` between two others.
    const hex = (c: string): string => `\\x${c.charCodeAt(0).toString(16).toUpperCase()}`;
    const single = (c: string): string => (c === "\\" || c === "]" || c === "^" ? hex(c) : c);
    const rejects = (cs: string[]): string =>
      cs.map((c, i) => (c === "\\" || c === "]" || (c === "-" && i < cs.length - 1) ? hex(c) : c)).join("");
    // default mode: an escape then any characters, one rule (every trie node offers it)
    let escRest: string | null = null;
    const escapeRest = (): string => (escRest ??= this.rules.add("key-escape-rest", `[\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) ${char}*`));
    // default mode: what else may follow a node than its children: a first character that differs
    // from theirs, raw or escaped (an escape only when no child could be spelled that way), and
    // the end of the key when the node is no name. One rule per set of children, referenced from
    // every node with that set: most nodes have one child, and writing these alternatives inline
    // at each node was half of a Kubernetes grammar's text
    const otherKey = (keys: string[], end: boolean): string => {
      const name = `key-other-${keys.map((k) => k.codePointAt(0)!.toString(16)).join("-")}${end ? "-end" : ""}`;
      if (this.rules.has(name)) return name;
      let body = `[^"\\\\\\x00-\\x1F${rejects(keys)}] ${char}*`;
      if (keys.every((k) => /^[\x20-\x7e]$/.test(k) && k !== '"' && k !== "\\" && k !== "/")) body += ` | ${escapeRest()}`;
      // a proper prefix of the names that is none of them is a key too (the reference's group has
      // no empty branch here, so it rejects such keys). An empty branch, not `?`: a quantified
      // group counts the rules generated inside it against llama.cpp's 2,000
      if (!end) body += ' | ""';
      return this.rules.add(name, body);
    };
    // default mode: below a node, the rest of one name (single children down to its end, no other
    // name ending on the way) is a chain of rules, one per suffix, shared by every name in the
    // grammar that ends the same way (`key-rest-N ::= [c] key-rest-M | key-other-c`). Written
    // inline, these chains were most of a large grammar's key tries: one group per character of
    // every name, the same names in many objects (Kubernetes' Container and EphemeralContainer)
    const chainBelow = (node: Trie): string[] | null => {
      const chars: string[] = [];
      for (let at = node; ; ) {
        if (at.children.size === 0) return at.end && chars.length > 0 && chars.length <= MAX_SHARED_REST ? chars : null;
        if (at.children.size > 1 || at.end) return null;
        const [[c, next]] = at.children;
        chars.push(c);
        at = next!;
      }
    };
    const restRule = (chars: string[]): string => {
      let rule: string | null = null;
      for (let i = chars.length - 1; i >= 0; i--) {
        const c = chars[i]!;
        // a suffix is its first character and the rule of the rest: that pair keys it
        const key = rule === null ? c : `${c} ${rule}`;
        const known = this.keyRests.get(key);
        if (known !== undefined) {
          rule = known;
          continue;
        }
        // the node before c is no name's end: otherKey's `""` lets the key stop there
        rule = this.rules.add(`key-rest-${this.keyRests.size}`, `[${single(c)}] ${rule ?? `${char}+`} | ${otherKey([c], false)}`);
        this.keyRests.set(key, rule);
      }
      return rule!;
    };
    const out: string[] = ['["] ( '];
    const walk = (node: Trie): void => {
      const keys = [...node.children.keys()].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
      keys.forEach((k, i) => {
        const child = node.children.get(k)!;
        if (i > 0) out.push(" | ");
        out.push(`[${single(k)}]`);
        const chain = this.rules.reference ? null : chainBelow(child);
        if (chain !== null) {
          out.push(` ${restRule(chain)}`);
        } else if (child.children.size > 0) {
          out.push(" (");
          walk(child);
          out.push(")");
        } else if (child.end) {
          out.push(` ${char}+`);
        }
      });
      if (keys.length === 0) return;
      if (this.rules.reference) out.push(` | [^"${rejects(keys)}] ${char}*`);
      else if (node === root) out.push(` | ${otherKey(keys, true)}`);
      else out.push(` | ${otherKey(keys, node.end)}`);
    };
    walk(root);
    // only "" declared: any non-empty key (the reference writes an empty group here, which
    // accepts "" and nothing else)
    if (root.children.size === 0) out.push(`${char}+`);
    // the empty key: optional in the reference; an empty branch in the default mode (as above)
    if (!root.end && !this.rules.reference) out.push(' | "" )');
    else out.push(root.end ? " )" : " )?");
    out.push(' ["]');
    return out.join("");
  }
}
