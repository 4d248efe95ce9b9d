/**
 * GBNF parsed the way llama.cpp's `llama_grammar_parser` parses it (src/llama-grammar.cpp):
 * the same syntax, the same rules synthesized for groups and repetitions (`S{m,n}` becomes m
 * copies of S and n-m rules `S'(k) ::= S S'(k-1) |`), the same repetition limits. What it keeps of
 * each rule is what the checks need: per alternative, its symbols (a rule reference or a
 * terminal) and how many grammar elements llama.cpp allocates for it. Every error has the offset
 * it was found at.
 */

/** llama.cpp's MAX_REPETITION_THRESHOLD. */
export const MAX_REPETITION = 2000;

/** A symbol of an alternative: a rule id, or TERMINAL (a character, class, `.` or token). */
export const TERMINAL = -1;

const EMPTY: number[] = [];

export interface ParsedRule {
  name: string;
  /** Where the rule (or the group / repetition it was made for) starts in the source. */
  offset: number;
  /** Defined by the source (not only referenced). */
  defined: boolean;
  /**
   * The symbols of each alternative, cut after the first terminal (nothing after one matters to
   * the left-recursion walk), and with repeated copies of a symbol kept once (they add no edge).
   */
  alternatives: number[][];
  /** Grammar elements llama.cpp allocates for it. */
  elements: number;
}

export interface ParsedGrammar {
  /**
   * By rule id. A repetition's synthesized rules (`x{0,1998}` makes 1,998) are one RepeatChain,
   * met at each of their ids: read a rule through ruleName / ruleAlternatives / ruleElements.
   */
  rules: (ParsedRule | RepeatChain)[];
  /** The rules named in the source; synthesized rules are found by ruleId. */
  ids: Map<string, number>;
  /** First reference of each rule id (for "undefined rule" errors). */
  firstUse: Map<number, number>;
}

/**
 * The rules handle_repetitions synthesizes for one repetition, ids first..first+count-1: rule k is
 * `S S'(k-1) |` (the first one `S |` when the count is bounded; `S S' |`, itself, when it is not).
 * Kept as one object: they differ only by the rule they refer to.
 */
export class RepeatChain {
  readonly defined = true;
  constructor(
    readonly base: string,
    readonly first: number,
    readonly count: number,
    /** S's symbols, cut after its first terminal (see `cut`). */
    readonly head: number[],
    readonly link: "previous" | "self",
    /** S has a terminal: the alternatives end there, the rule after S is left out of them. */
    readonly cut: boolean,
    readonly offset: number,
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
  const r = g.rules[id]!;
  return r instanceof RepeatChain ? `${r.base}_${id}` : r.name;
}

/** The symbols of each alternative of rule `id` (see ParsedRule.alternatives). */
export function ruleAlternatives(g: ParsedGrammar, id: number): number[][] {
  const r = g.rules[id]!;
  if (!(r instanceof RepeatChain)) return r.alternatives;
  const next = r.next(id);
  return [next < 0 || r.cut ? r.head : [...r.head, next], EMPTY];
}

export function ruleElements(g: ParsedGrammar, id: number): number {
  const r = g.rules[id]!;
  return r instanceof RepeatChain ? r.elements(id) : r.elements;
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

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isWord = (c: string | undefined): boolean => c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "-" || isDigit(c));
const HEX = /^[0-9a-fA-F]$/;

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

class SynthesizedRule implements ParsedRule {
  readonly defined = true;
  alternatives: number[][] = [];
  elements = 0;
  constructor(
    readonly base: string,
    readonly id: number,
    readonly offset: number,
  ) {}
  get name(): string {
    return `${this.base}_${this.id}`;
  }
}

/** The id of the rule llama.cpp's symbol table holds under `name`, synthesized ones included. */
export function ruleId(g: ParsedGrammar, name: string): number | undefined {
  const named = g.ids.get(name);
  if (named !== undefined) return named;
  const m = /^(.*)_(\d+)$/.exec(name);
  if (m === null) return undefined;
  const id = Number(m[2]);
  const r = g.rules[id];
  if (r instanceof SynthesizedRule) return r.base === m[1] && String(r.id) === m[2] ? r.id : undefined;
  return r instanceof RepeatChain && r.base === m[1] && String(id) === m[2] ? id : undefined;
}

/** One alternative being built: its symbols and elements, in llama.cpp's layout. */
interface Seq {
  symbols: number[];
  elements: number;
}

class Parser {
  private pos = 0;
  private readonly rules: (ParsedRule | RepeatChain)[] = [];
  private readonly ids = new Map<string, number>();
  private readonly firstUse = new Map<number, number>();
  private nesting = 0;
  private current = "";
  /** Elements allocated so far, all rules together. */
  private elements = 0;

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

  private symbol(name: string, at: number): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.rules.length;
      this.ids.set(name, id);
      this.rules.push({ name, offset: at, defined: false, alternatives: [], elements: 0 });
    }
    return id;
  }

  /** llama.cpp's generate_symbol_id: a fresh rule named after the one being parsed. Its name
   * (`base_id`) is written only when asked for, and kept out of `ids`: a name in the source has
   * no `_`, so no source reference can meet it (`x{0,2000}` makes 2,000 of them). */
  private synthesize(base: string, at: number): number {
    const id = this.rules.length;
    this.rules.push(new SynthesizedRule(base, id, at));
    return id;
  }

  private space(newlineOk: boolean): void {
    const s = this.src;
    for (;;) {
      const c = s[this.pos];
      if (c === " " || c === "\t" || (newlineOk && (c === "\r" || c === "\n"))) this.pos++;
      else if (c === "#") while (this.pos < s.length && s[this.pos] !== "\r" && s[this.pos] !== "\n") this.pos++;
      else return;
    }
  }

  private name(): string {
    const start = this.pos;
    while (isWord(this.src[this.pos])) this.pos++;
    if (this.pos === start) this.fail("expecting a name");
    return this.src.slice(start, this.pos);
  }

  private int(): number {
    const start = this.pos;
    while (isDigit(this.src[this.pos])) this.pos++;
    if (this.pos === start) this.fail("expecting an integer");
    // big enough to be "more than the limit" without losing that fact
    const digits = this.src.slice(start, this.pos).replace(/^0+(?=\d)/, "");
    return digits.length > 15 ? Number.MAX_SAFE_INTEGER : Number(digits);
  }

  /** One character of a literal or class (an escape or a code point). */
  private char(): void {
    const s = this.src;
    if (this.pos >= s.length) this.fail("unexpected end of input");
    if (s[this.pos] === "\\") {
      const e = s[this.pos + 1];
      const hex = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
      if (hex > 0) {
        for (let i = 0; i < hex; i++) if (!HEX.test(s[this.pos + 2 + i] ?? "")) this.fail(`expecting ${hex} hex chars`);
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
    this.pos += (s.codePointAt(this.pos) ?? 0) > 0xffff ? 2 : 1;
  }

  parse(): ParsedGrammar {
    this.space(true);
    while (this.pos < this.src.length) this.rule();
    return { rules: this.rules, ids: this.ids, firstUse: this.firstUse };
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
    const c = this.src[this.pos];
    if (c === "\r") this.pos += this.src[this.pos + 1] === "\n" ? 2 : 1;
    else if (c === "\n") this.pos++;
    else if (this.pos < this.src.length) this.fail("expecting newline or end");
    this.space(true);
    this.current = "";
  }

  private alternates(ruleName: string, id: number, nested: boolean, at: number): void {
    const alts: number[][] = [];
    let elements = 1; // END
    for (;;) {
      const seq = this.sequence(ruleName, nested);
      const t = seq.symbols.indexOf(TERMINAL);
      alts.push(t < 0 ? seq.symbols : seq.symbols.slice(0, t + 1));
      elements += seq.elements;
      if (this.src[this.pos] !== "|") break;
      elements++; // ALT
      this.pos++;
      this.space(true);
    }
    const r = this.rules[id] as ParsedRule;
    // a rule defined twice keeps its last definition, as add_rule does
    r.alternatives = alts;
    this.grow(elements - r.elements, at);
    r.elements = elements;
    r.defined = true;
    if (!nested) r.offset = at;
  }

  private sequence(ruleName: string, nested: boolean): Seq {
    const s = this.src;
    const seq: Seq = { symbols: [], elements: 0 };
    // the last symbol (what a repetition applies to): its span in seq.symbols and its element count
    let lastSymStart = -1;
    let lastElements = 0;
    let prevRules = 1;
    const begin = (): void => {
      lastSymStart = seq.symbols.length;
      prevRules = 1;
    };
    while (this.pos < s.length) {
      const c = s[this.pos];
      const at = this.pos;
      if (c === '"') {
        this.pos++;
        begin();
        let n = 0;
        while (s[this.pos] !== '"') {
          this.char();
          n++;
        }
        this.pos++;
        if (n > 0) seq.symbols.push(TERMINAL);
        lastElements = n;
        seq.elements += n;
        this.grow(n, at);
        this.space(nested);
      } else if (c === "[") {
        this.pos++;
        if (s[this.pos] === "^") this.pos++;
        begin();
        let n = 0;
        while (s[this.pos] !== "]") {
          this.char();
          n++;
          if (s[this.pos] === "-" && s[this.pos + 1] !== "]") {
            if (this.pos + 1 >= s.length) this.fail("unexpected end of input");
            this.pos++;
            this.char();
            n++;
          }
        }
        this.pos++;
        seq.symbols.push(TERMINAL);
        lastElements = n;
        seq.elements += n;
        this.grow(n, at);
        this.space(nested);
      } else if (c === "<" || c === "!") {
        if (c === "!") this.pos++;
        if (s[this.pos] !== "<") this.fail("expecting '<'");
        this.pos++;
        if (s[this.pos] === "[") {
          this.pos++;
          this.int();
          if (s[this.pos] !== "]") this.fail("expecting ']'");
          this.pos++;
          if (s[this.pos] !== ">") this.fail("expecting '>'");
          this.pos++;
        } else {
          const end = s.indexOf(">", this.pos);
          if (end < 0) this.fail("expecting '>'");
          this.pos = end + 1;
        }
        begin();
        seq.symbols.push(TERMINAL);
        lastElements = 1;
        seq.elements += 1;
        this.space(nested);
      } else if (isWord(c)) {
        const name = this.name();
        const id = this.symbol(name, at);
        if (!this.firstUse.has(id)) this.firstUse.set(id, at);
        this.space(nested);
        begin();
        seq.symbols.push(id);
        lastElements = 1;
        seq.elements += 1;
        this.grow(1, at);
      } else if (c === "(") {
        if (++this.nesting > this.options.maxNesting) this.fail(`groups nest deeper than ${this.options.maxNesting} levels`);
        this.pos++;
        this.space(true);
        const before = this.rules.length;
        const sub = this.synthesize(ruleName, at);
        this.alternates(ruleName, sub, true, at);
        this.nesting--;
        prevRules = Math.max(1, this.rules.length - before);
        lastSymStart = seq.symbols.length;
        seq.symbols.push(sub);
        lastElements = 1;
        seq.elements += 1;
        if (s[this.pos] !== ")") this.fail("expecting ')'");
        this.pos++;
        this.space(nested);
      } else if (c === ".") {
        begin();
        seq.symbols.push(TERMINAL);
        lastElements = 1;
        seq.elements += 1;
        this.pos++;
        this.space(nested);
      } else if (c === "*" || c === "+" || c === "?") {
        this.pos++;
        this.space(nested);
        [prevRules, lastElements] = this.repeat(seq, ruleName, lastSymStart, lastElements, prevRules, c === "+" ? 1 : 0, c === "?" ? 1 : Infinity, at);
      } else if (c === "{") {
        this.pos++;
        this.space(nested);
        if (!isDigit(s[this.pos])) this.fail("expecting an int");
        const min = this.int();
        this.space(nested);
        let max = min;
        if (s[this.pos] === "}") {
          this.pos++;
          this.space(nested);
        } else if (s[this.pos] === ",") {
          this.pos++;
          this.space(nested);
          max = isDigit(s[this.pos]) ? this.int() : Infinity;
          this.space(nested);
          if (s[this.pos] !== "}") this.fail("expecting '}'");
          this.pos++;
          this.space(nested);
        } else {
          this.fail("expecting ','");
        }
        if (min > MAX_REPETITION) this.fail(`repetition count ${min} exceeds llama.cpp's limit of ${MAX_REPETITION}`, at);
        // llama.cpp treats a maximum above its limit as no maximum
        if (max > MAX_REPETITION) max = Infinity;
        if (min > max) this.fail(`repetition {${min},${max}}: the minimum is greater than the maximum`, at);
        [prevRules, lastElements] = this.repeat(seq, ruleName, lastSymStart, lastElements, prevRules, min, max, at);
      } else {
        break;
      }
    }
    return seq;
  }

  /**
   * handle_repetitions: rewrites the last symbol of `seq` into copies and synthesized rules.
   * Returns the new rule count factor and the elements the last symbol's span now takes (a
   * further repetition applies to that whole span, as in llama.cpp).
   */
  private repeat(seq: Seq, ruleName: string, lastSymStart: number, lastElements: number, prevRules: number, min: number, max: number, at: number): [number, number] {
    if (lastSymStart < 0 || lastSymStart >= seq.symbols.length) this.fail("expecting preceding item to */+/?/{", at);
    const total = max !== Infinity && max > 0 ? max : min > 0 ? min : 1;
    if (prevRules * total >= MAX_REPETITION) {
      this.fail(`a repetition of ${total} over ${prevRules} generated rules exceeds llama.cpp's limit of ${MAX_REPETITION}`, at);
    }
    let prev = seq.symbols.slice(lastSymStart);
    const t = prev.indexOf(TERMINAL);
    if (t >= 0) prev = prev.slice(0, t + 1);
    if (min === 0) {
      seq.symbols.length = lastSymStart;
      seq.elements -= lastElements;
      this.grow(-lastElements, at);
    } else {
      // the copies are counted, not stored: they reference the same rules
      seq.elements += (min - 1) * lastElements;
      this.grow((min - 1) * lastElements, at);
    }
    const optional = max === Infinity ? 1 : max - min;
    let last = -1;
    if (optional > 0) {
      // `x{0,2000}` synthesizes 2,000 rules: one object for all (nothing writes to a parsed rule)
      const first = this.rules.length;
      const chain = new RepeatChain(ruleName, first, optional, [...prev], max === Infinity ? "self" : "previous", t >= 0, at, lastElements);
      for (let i = 0; i < optional; i++) {
        this.rules.push(chain);
        this.grow(chain.elements(first + i), at);
      }
      last = first + optional - 1;
    }
    if (optional > 0) {
      seq.symbols.push(last);
      seq.elements += 1;
    }
    return [prevRules * total, min * lastElements + (optional > 0 ? 1 : 0)];
  }
}
