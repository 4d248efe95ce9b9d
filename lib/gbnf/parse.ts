/**
 * GBNF parsed the way llama.cpp's `llama_grammar_parser` parses it (src/llama-grammar.cpp):
 * the same syntax, the same rules synthesized for groups and repetitions (`S{m,n}` becomes m
 * copies of S and n-m rules `S'(k) ::= S S'(k-1) |`), the same repetition limits. What it keeps of
 * each rule is what the checks need: per alternative, its symbols (a rule reference or a
 * terminal) and how many grammar elements llama.cpp allocates for it. Every error has the offset
 * it was found at.
 *
 * Everything is kept in flat arrays indexed by rule id, the symbols of all alternatives in one
 * array: a JSON-schema grammar of 300 KB has 10,000 rules and 18,000 alternatives, and an object
 * and an array for each was most of the check's time (in the garbage collector).
 */

/** llama.cpp's MAX_REPETITION_THRESHOLD. */
export const MAX_REPETITION = 2000;

/** A symbol of an alternative: a rule id, or TERMINAL (a character, class, `.` or token). */
export const TERMINAL = -1;

/**
 * How a rule came to be: named in the source, a `( ... )` group (named `base_id`), or one of a
 * repetition's rules (see RepeatChain, named `base_id`).
 */
export const RuleKind = { Named: 0, Group: 1, Repeat: 2 } as const;
export type RuleKind = (typeof RuleKind)[keyof typeof RuleKind];

export interface ParsedGrammar {
  /** Rules, ids 0..count-1 (the columns below may be longer). */
  count: number;
  kind: Uint8Array;
  /** The name (Named) or the base the name is made from (`base_id`). */
  names: string[];
  /** Where the rule (or the group / repetition it was made for) starts in the source. */
  offset: Int32Array;
  /** 1: defined by the source (not only referenced); always for Group and Repeat. */
  defined: Uint8Array;
  /** Grammar elements llama.cpp allocates for it (Repeat: see RepeatChain.elements). */
  elements: Int32Array;
  /** Alternatives of rule `id`: altFirst[id] .. altFirst[id] + altCount[id] - 1 (not Repeat). */
  altFirst: Int32Array;
  altCount: Int32Array;
  /**
   * Alternative `a`'s symbols: syms[altStart[a] .. altStart[a] + altLength[a] - 1], cut after the
   * first terminal (nothing after one matters to the left-recursion walk).
   */
  altStart: number[];
  altLength: number[];
  syms: number[];
  /** The repetition a Repeat rule belongs to: chains[chainOf[id]]. */
  chainOf: Int32Array;
  chains: RepeatChain[];
  /** The rules named in the source; synthesized rules are found by ruleId. */
  ids: Map<string, number>;
  /** First reference of each rule id (-1: none), for "undefined rule" errors. */
  firstUse: Int32Array;
}

/**
 * The rules handle_repetitions synthesizes for one repetition, ids first..first+count-1: rule k is
 * `S S'(k-1) |` (the first one `S |` when the count is bounded; `S S' |`, itself, when it is not).
 * Kept as one object: they differ only by the rule they refer to.
 */
export class RepeatChain {
  constructor(
    readonly first: number,
    readonly count: number,
    /** S's symbols in the grammar's `syms` (cut after its first terminal, see `cut`). */
    readonly headStart: number,
    readonly headLength: number,
    readonly link: "previous" | "self",
    /** S has a terminal: the alternatives end there, the rule after S is left out of them. */
    readonly cut: boolean,
    private readonly headElements: number,
  ) {}

  /** The rule that rule `id` refers to after S, or -1. */
  next(id: number): number {
    if (this.link === "self") return id;
    return id > this.first ? id - 1 : -1;
  }

  elements(id: number): number {
    return this.headElements + (this.next(id) < 0 ? 0 : 1) + 2;
  }
}

export function ruleName(g: ParsedGrammar, id: number): string {
  return g.kind[id] === RuleKind.Named ? g.names[id]! : `${g.names[id]}_${id}`;
}

export function ruleElements(g: ParsedGrammar, id: number): number {
  return g.kind[id] === RuleKind.Repeat ? g.chains[g.chainOf[id]!]!.elements(id) : g.elements[id]!;
}

export class GbnfSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
    readonly rule?: string,
  ) {
    super(message);
  }
}

const C_TAB = 9;
const C_LF = 10;
const C_CR = 13;
const C_SPACE = 32;
const C_HASH = 35;
const C_QUOTE = 34;
const C_LBRACKET = 91;
const C_RBRACKET = 93;
const C_BACKSLASH = 92;

const isDigitCode = (c: number): boolean => c >= 48 && c <= 57;
const isWordCode = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 45 || (c >= 48 && c <= 57);
const isHexCode = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);

/** Options of the parse. */
export interface ParseGbnfOptions {
  /** Deepest `( ... )` nesting accepted (llama.cpp recurses once per level). */
  maxNesting: number;
  /** Most grammar elements llama.cpp may allocate for the whole grammar. */
  maxElements: number;
}

export function parseGbnf(src: string, options: ParseGbnfOptions): ParsedGrammar {
  return new Parser(src, options).parse();
}

/** The id of the rule llama.cpp's symbol table holds under `name`, synthesized ones included. */
export function ruleId(g: ParsedGrammar, name: string): number | undefined {
  const named = g.ids.get(name);
  if (named !== undefined) return named;
  const m = /^(.*)_(\d+)$/.exec(name);
  if (m === null) return undefined;
  const id = Number(m[2]);
  if (!(id < g.count) || g.kind[id] === RuleKind.Named) return undefined;
  return g.names[id] === m[1] && String(id) === m[2] ? id : undefined;
}

class Parser {
  private pos = 0;
  private readonly g: ParsedGrammar = {
    count: 0,
    kind: new Uint8Array(64),
    names: [],
    offset: new Int32Array(64),
    defined: new Uint8Array(64),
    elements: new Int32Array(64),
    altFirst: new Int32Array(64),
    altCount: new Int32Array(64),
    altStart: [],
    altLength: [],
    syms: [],
    chainOf: new Int32Array(64),
    chains: [],
    ids: new Map(),
    firstUse: new Int32Array(64),
  };
  private nesting = 0;
  private current = "";
  /** Elements allocated so far, all rules together. */
  private elements = 0;
  /**
   * Per group depth: the symbols of the sequence being read, and the alternatives read so far
   * (start, length pairs in `syms`); reused, so a sequence allocates nothing.
   */
  private readonly seqAt: number[][] = [];
  private readonly altsAt: number[][] = [];
  /** The sequence being read: its elements, and its last symbol (what a repetition applies to). */
  private seqElements = 0;
  private lastSymStart = -1;
  private lastElements = 0;
  private prevRules = 1;

  constructor(
    private readonly src: string,
    private readonly options: ParseGbnfOptions,
  ) {}

  private grow(n: number, at: number): void {
    this.elements += n;
    if (this.elements > this.options.maxElements) this.fail(`the grammar expands to more than ${this.options.maxElements} elements`, at);
  }

  private fail(message: string, at = this.pos): never {
    throw new GbnfSyntaxError(message, at, this.current || undefined);
  }

  /** Room for `n` more rules in the columns (doubling). */
  private reserve(n: number): void {
    const g = this.g;
    if (g.count + n <= g.kind.length) return;
    let cap = g.kind.length;
    while (cap < g.count + n) cap *= 2;
    const grown = <T extends Uint8Array | Int32Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(cap);
      b.set(a);
      return b;
    };
    g.kind = grown(g.kind);
    g.offset = grown(g.offset);
    g.defined = grown(g.defined);
    g.elements = grown(g.elements);
    g.altFirst = grown(g.altFirst);
    g.altCount = grown(g.altCount);
    g.chainOf = grown(g.chainOf);
    g.firstUse = grown(g.firstUse);
  }

  /** `n` new rules of one kind, name and offset; returns the first id. */
  private newRules(kind: RuleKind, name: string, at: number, defined: boolean, n = 1): number {
    this.reserve(n);
    const g = this.g;
    const id = g.count;
    g.count += n;
    if (n === 1) {
      g.kind[id] = kind;
      g.offset[id] = at;
      g.defined[id] = defined ? 1 : 0;
      g.firstUse[id] = -1;
    } else {
      g.kind.fill(kind, id, id + n);
      g.offset.fill(at, id, id + n);
      g.defined.fill(defined ? 1 : 0, id, id + n);
      g.firstUse.fill(-1, id, id + n);
    }
    for (let i = 0; i < n; i++) g.names.push(name);
    return id;
  }

  private symbol(name: string, at: number): number {
    let id = this.g.ids.get(name);
    if (id === undefined) {
      id = this.newRules(RuleKind.Named, name, at, false);
      this.g.ids.set(name, id);
    }
    return id;
  }

  private code(at: number): number {
    // NaN past the end: no comparison matches it
    return this.src.charCodeAt(at);
  }

  private space(newlineOk: boolean): void {
    const s = this.src;
    for (;;) {
      const c = s.charCodeAt(this.pos);
      if (c === C_SPACE || c === C_TAB || (newlineOk && (c === C_CR || c === C_LF))) this.pos++;
      else if (c === C_HASH)
        while (this.pos < s.length && s.charCodeAt(this.pos) !== C_CR && s.charCodeAt(this.pos) !== C_LF) this.pos++;
      else return;
    }
  }

  private name(): string {
    const start = this.pos;
    while (isWordCode(this.code(this.pos))) this.pos++;
    if (this.pos === start) this.fail("expecting a name");
    return this.src.slice(start, this.pos);
  }

  private int(): number {
    const start = this.pos;
    while (isDigitCode(this.code(this.pos))) this.pos++;
    if (this.pos === start) this.fail("expecting an integer");
    // big enough to be "more than the limit" without losing that fact
    const digits = this.src.slice(start, this.pos).replace(/^0+(?=\d)/, "");
    return digits.length > 15 ? Number.MAX_SAFE_INTEGER : Number(digits);
  }

  /** One character of a literal or class (an escape or a code point). */
  private char(): void {
    const s = this.src;
    if (this.pos >= s.length) this.fail("unexpected end of input");
    const c = s.charCodeAt(this.pos);
    if (c === C_BACKSLASH) {
      const e = s[this.pos + 1];
      const hex = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
      if (hex > 0) {
        for (let i = 0; i < hex; i++) if (!isHexCode(s.charCodeAt(this.pos + 2 + i))) this.fail(`expecting ${hex} hex chars`);
        // past Unicode's last code point there is no UTF-8 to match (llama.cpp would encode invalid bytes)
        if (hex === 8 && Number.parseInt(s.slice(this.pos + 2, this.pos + 10), 16) > 0x10ffff) this.fail(`code point \\U${s.slice(this.pos + 2, this.pos + 10)} is above U+10FFFF`);
        this.pos += 2 + hex;
        return;
      }
      if (e !== undefined && "trn\\\"[]-".includes(e)) {
        this.pos += 2;
        return;
      }
      this.fail("unknown escape");
    }
    // a surrogate pair is one code point
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(this.pos + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        this.pos += 2;
        return;
      }
    }
    this.pos++;
  }

  parse(): ParsedGrammar {
    this.space(true);
    while (this.pos < this.src.length) this.rule();
    return this.g;
  }

  private rule(): void {
    const at = this.pos;
    const name = this.name();
    this.current = name;
    this.space(false);
    if (!this.src.startsWith("::=", this.pos)) this.fail("expecting ::=");
    this.pos += 3;
    this.space(true);
    const id = this.symbol(name, at);
    this.alternates(name, id, false, at);
    const c = this.code(this.pos);
    if (c === C_CR) this.pos += this.code(this.pos + 1) === C_LF ? 2 : 1;
    else if (c === C_LF) this.pos++;
    else if (this.pos < this.src.length) this.fail("expecting newline or end");
    this.space(true);
    this.current = "";
  }

  private alternates(ruleName: string, id: number, nested: boolean, at: number): void {
    const g = this.g;
    const depth = nested ? this.nesting : 0;
    const alts = (this.altsAt[depth] ??= []);
    const altsFrom = alts.length;
    let elements = 1; // END
    for (;;) {
      const seq = this.sequence(ruleName, nested);
      // the symbols, cut after the first terminal, go to `syms` once the sequence is whole
      // (groups inside it wrote theirs meanwhile)
      const start = g.syms.length;
      for (let i = 0; i < seq.length; i++) {
        const sym = seq[i]!;
        g.syms.push(sym);
        if (sym === TERMINAL) break;
      }
      alts.push(start, g.syms.length - start);
      elements += this.seqElements;
      if (this.code(this.pos) !== 124 /* | */) break;
      elements++; // ALT
      this.pos++;
      this.space(true);
    }
    // a rule defined twice keeps its last definition, as add_rule does
    g.altFirst[id] = g.altStart.length;
    g.altCount[id] = (alts.length - altsFrom) / 2;
    for (let i = altsFrom; i < alts.length; i += 2) {
      g.altStart.push(alts[i]!);
      g.altLength.push(alts[i + 1]!);
    }
    alts.length = altsFrom;
    this.grow(elements - g.elements[id]!, at);
    g.elements[id] = elements;
    g.defined[id] = 1;
    if (!nested) g.offset[id] = at;
  }

  /** Reads one alternative into the scratch array of this depth (returned); its elements in seqElements. */
  private sequence(ruleName: string, nested: boolean): number[] {
    const s = this.src;
    const depth = nested ? this.nesting : 0;
    const seq = (this.seqAt[depth] ??= []);
    seq.length = 0;
    let elements = 0;
    this.lastSymStart = -1;
    this.lastElements = 0;
    this.prevRules = 1;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      const at = this.pos;
      if (c === C_QUOTE) {
        this.pos++;
        this.lastSymStart = seq.length;
        this.prevRules = 1;
        let n = 0;
        while (s.charCodeAt(this.pos) !== C_QUOTE) {
          this.char();
          n++;
        }
        this.pos++;
        if (n > 0) seq.push(TERMINAL);
        this.lastElements = n;
        elements += n;
        this.grow(n, at);
        this.space(nested);
      } else if (c === C_LBRACKET) {
        this.pos++;
        if (s.charCodeAt(this.pos) === 94 /* ^ */) this.pos++;
        this.lastSymStart = seq.length;
        this.prevRules = 1;
        let n = 0;
        while (s.charCodeAt(this.pos) !== C_RBRACKET) {
          this.char();
          n++;
          if (s.charCodeAt(this.pos) === 45 /* - */ && s.charCodeAt(this.pos + 1) !== C_RBRACKET) {
            if (this.pos + 1 >= s.length) this.fail("unexpected end of input");
            this.pos++;
            this.char();
            n++;
          }
        }
        this.pos++;
        seq.push(TERMINAL);
        this.lastElements = n;
        elements += n;
        this.grow(n, at);
        this.space(nested);
      } else if (c === 60 /* < */ || c === 33 /* ! */) {
        if (c === 33) this.pos++;
        if (s.charCodeAt(this.pos) !== 60) this.fail("expecting '<'");
        this.pos++;
        if (s.charCodeAt(this.pos) === C_LBRACKET) {
          this.pos++;
          this.int();
          if (s.charCodeAt(this.pos) !== C_RBRACKET) this.fail("expecting ']'");
          this.pos++;
          if (s.charCodeAt(this.pos) !== 62 /* > */) this.fail("expecting '>'");
          this.pos++;
        } else {
          const end = s.indexOf(">", this.pos);
          if (end < 0) this.fail("expecting '>'");
          this.pos = end + 1;
        }
        this.lastSymStart = seq.length;
        this.prevRules = 1;
        seq.push(TERMINAL);
        this.lastElements = 1;
        elements += 1;
        this.space(nested);
      } else if (isWordCode(c)) {
        const name = this.name();
        const id = this.symbol(name, at);
        if (this.g.firstUse[id] === -1) this.g.firstUse[id] = at;
        this.space(nested);
        this.lastSymStart = seq.length;
        this.prevRules = 1;
        seq.push(id);
        this.lastElements = 1;
        elements += 1;
        this.grow(1, at);
      } else if (c === 40 /* ( */) {
        if (++this.nesting > this.options.maxNesting) this.fail(`groups nest deeper than ${this.options.maxNesting} levels`);
        this.pos++;
        this.space(true);
        const before = this.g.count;
        const sub = this.newRules(RuleKind.Group, ruleName, at, true);
        // the group's alternatives use the next depth's scratch arrays
        this.alternates(ruleName, sub, true, at);
        this.nesting--;
        this.prevRules = Math.max(1, this.g.count - before);
        this.lastSymStart = seq.length;
        seq.push(sub);
        this.lastElements = 1;
        elements += 1;
        if (s.charCodeAt(this.pos) !== 41 /* ) */) this.fail("expecting ')'");
        this.pos++;
        this.space(nested);
      } else if (c === 46 /* . */) {
        this.lastSymStart = seq.length;
        this.prevRules = 1;
        seq.push(TERMINAL);
        this.lastElements = 1;
        elements += 1;
        this.pos++;
        this.space(nested);
      } else if (c === 42 /* * */ || c === 43 /* + */ || c === 63 /* ? */) {
        this.pos++;
        this.space(nested);
        elements = this.repeat(seq, elements, ruleName, c === 43 ? 1 : 0, c === 63 ? 1 : Infinity, at);
      } else if (c === 123 /* { */) {
        this.pos++;
        this.space(nested);
        if (!isDigitCode(s.charCodeAt(this.pos))) this.fail("expecting an int");
        const min = this.int();
        this.space(nested);
        let max = min;
        if (s.charCodeAt(this.pos) === 125 /* } */) {
          this.pos++;
          this.space(nested);
        } else if (s.charCodeAt(this.pos) === 44 /* , */) {
          this.pos++;
          this.space(nested);
          max = isDigitCode(s.charCodeAt(this.pos)) ? this.int() : Infinity;
          this.space(nested);
          if (s.charCodeAt(this.pos) !== 125) this.fail("expecting '}'");
          this.pos++;
          this.space(nested);
        } else {
          this.fail("expecting ','");
        }
        if (min > MAX_REPETITION) this.fail(`repetition count ${min} exceeds llama.cpp's limit of ${MAX_REPETITION}`, at);
        // llama.cpp treats a maximum above its limit as no maximum
        if (max > MAX_REPETITION) max = Infinity;
        if (min > max) this.fail(`repetition {${min},${max}}: the minimum is greater than the maximum`, at);
        elements = this.repeat(seq, elements, ruleName, min, max, at);
      } else {
        break;
      }
    }
    this.seqElements = elements;
    return seq;
  }

  /**
   * handle_repetitions: rewrites the last symbol of `seq` into copies and synthesized rules.
   * Updates the rule count factor and the elements the last symbol's span now takes (a further
   * repetition applies to that whole span, as in llama.cpp); returns the sequence's elements.
   */
  private repeat(seq: number[], elements: number, ruleName: string, min: number, max: number, at: number): number {
    const lastSymStart = this.lastSymStart;
    const lastElements = this.lastElements;
    if (lastSymStart < 0 || lastSymStart >= seq.length) this.fail("expecting preceding item to */+/?/{", at);
    const total = max !== Infinity && max > 0 ? max : min > 0 ? min : 1;
    if (this.prevRules * total >= MAX_REPETITION) {
      this.fail(`a repetition of ${total} over ${this.prevRules} generated rules exceeds llama.cpp's limit of ${MAX_REPETITION}`, at);
    }
    let prevEnd = seq.length;
    let cut = false;
    for (let i = lastSymStart; i < seq.length; i++) {
      if (seq[i] === TERMINAL) {
        prevEnd = i + 1;
        cut = true;
        break;
      }
    }
    const g = this.g;
    const optional = max === Infinity ? 1 : max - min;
    // S's symbols go to `syms`: the chain's rules read them there
    const headStart = g.syms.length;
    if (optional > 0) for (let i = lastSymStart; i < prevEnd; i++) g.syms.push(seq[i]!);
    if (min === 0) {
      seq.length = lastSymStart;
      elements -= lastElements;
      this.grow(-lastElements, at);
    } else {
      // the copies are counted, not stored: they reference the same rules
      elements += (min - 1) * lastElements;
      this.grow((min - 1) * lastElements, at);
    }
    if (optional > 0) {
      // `x{0,2000}` synthesizes 2,000 rules: one object for all (nothing writes to a parsed rule)
      const first = g.count;
      const chain = new RepeatChain(first, optional, headStart, prevEnd - lastSymStart, max === Infinity ? "self" : "previous", cut, lastElements);
      this.newRules(RuleKind.Repeat, ruleName, at, true, optional);
      g.chainOf.fill(g.chains.length, first, first + optional);
      g.chains.push(chain);
      // elements per rule: S, the next rule (none for the first of a bounded chain), ALT, END
      this.grow(optional * chain.elements(first + 1) - (chain.link === "previous" ? 1 : 0), at);
      seq.push(first + optional - 1);
      elements += 1;
    }
    this.prevRules *= total;
    this.lastElements = min * lastElements + (optional > 0 ? 1 : 0);
    return elements;
  }
}
