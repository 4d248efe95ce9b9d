/**
 * The parse tree: a flat arena of nodes (rule or tag, byte offsets, children ids), like the reference's
 * `common_peg_ast_arena`. Text is sliced from the input bytes on demand and decoded with U+FFFD for
 * ill-formed or cut sequences, so it never holds half a character; `start`/`end` stay exact byte offsets.
 */
import { invalidUtf8Ranges, utf8DecodeLossy } from "./utf8.js";

export type PegAstId = number;

export interface PegAstNode {
  id: PegAstId;
  /** rule name, "" for a tag node */
  rule: string;
  /** tag, "" for a rule node */
  tag: string;
  /** byte offsets into the parsed input */
  start: number;
  end: number;
  /** the matched text, decoded lossily (U+FFFD for bytes that are not a whole UTF-8 character) */
  text: string;
  /** true when the node's parser ran out of input (need_more_input) */
  isPartial: boolean;
  children: PegAstId[];
}

/** Nested JSON form: the same fields the reference harness prints. */
export interface PegAstNodeJson {
  id: PegAstId;
  rule: string;
  tag: string;
  start: number;
  end: number;
  text: string;
  is_partial: boolean;
  children: PegAstNodeJson[];
}

/**
 * Children that a stream parser's resumed repetition shares with earlier parses: `ids[0..n)` (an
 * append-only array: later parses only write past `n`), inserted after the node's first `at` own kids.
 * @internal
 */
export interface KidRun {
  readonly ids: Int32Array;
  readonly n: number;
  readonly at: number;
}

/**
 * Marks a run on the parse stack: `RUN_MARK, entry, n` (three slots) stands for the first `n` AST ids
 * of repetition entry `entry` (see `resumeRepetition` in parse.ts), so a resumed repetition does not
 * push, and its parent node does not copy, every finished iteration again on each parse.
 * @internal
 */
export const RUN_MARK = -1;

/** Where the ids of a run marker live (the stream session's repetition entries). @internal */
export interface RunSource {
  readonly ids: Int32Array;
  readonly tagged: boolean;
}

/** Node flags: the parser needed more input; its parse did not look at the end of the input; the node or a descendant has a tag. @internal */
export const PARTIAL = 1;
export const SETTLED = 2;
export const TAGGED = 4;

/**
 * Growable columnar storage for AST nodes (no object per node). Children of node i are
 * `kids[kidStart[i] .. kidStart[i] + kidCount[i])`, with `run[i]` (when set) inserted after the
 * first `run[i].at` of them.
 * @internal
 */
export class AstBuffers {
  // Plain arrays of small integers: cheaper than typed arrays for the many small ASTs of streaming.
  size = 0;
  rule: string[] = [];
  tag: string[] = [];
  start: number[] = [];
  end: number[] = [];
  /** per node: PARTIAL | SETTLED | TAGGED bits */
  flags: number[] = [];
  kidStart: number[] = [];
  kidCount: number[] = [];
  run: (KidRun | null)[] = [];
  kids: number[] = [];

  add(
    rule: string,
    tag: string,
    start: number,
    end: number,
    partial: boolean,
    settled: boolean,
    stack: Int32Array,
    from: number,
    to: number,
    runs: readonly RunSource[],
  ): PegAstId {
    const id = this.size++;
    const kids = this.kids;
    const kidStart = kids.length;
    const flags = this.flags;
    let tagged = tag !== "";
    let run: KidRun | null = null;
    for (let i = from; i < to; i++) {
      const k = stack[i]!;
      if (k !== RUN_MARK) {
        kids.push(k);
        if (!tagged && (flags[k]! & TAGGED) !== 0) tagged = true;
        continue;
      }
      const src = runs[stack[i + 1]!]!;
      const n = stack[i + 2]!;
      i += 2;
      if (src.tagged) tagged = true;
      if (run === null) run = { ids: src.ids, n, at: kids.length - kidStart };
      else for (let j = 0; j < n; j++) kids.push(src.ids[j]!); // a second run in one node is copied
    }
    this.rule.push(rule);
    this.tag.push(tag);
    this.start.push(start);
    this.end.push(end);
    flags.push((partial ? PARTIAL : 0) | (settled ? SETTLED : 0) | (tagged ? TAGGED : 0));
    this.kidStart.push(kidStart);
    this.kidCount.push(kids.length - kidStart);
    this.run.push(run);
    return id;
  }
}

/** Appends the AST ids of `stack[from..to)` to `out` (from `at`), expanding run markers; returns the new length. @internal */
export function expandStack(stack: Int32Array, from: number, to: number, runs: readonly RunSource[], out: Int32Array | number[], at: number): number {
  for (let i = from; i < to; i++) {
    const k = stack[i]!;
    if (k !== RUN_MARK) {
      out[at++] = k;
      continue;
    }
    const src = runs[stack[i + 1]!]!;
    const n = stack[i + 2]!;
    i += 2;
    for (let j = 0; j < n; j++) out[at++] = src.ids[j]!;
  }
  return at;
}

/** Number of AST ids `stack[from..to)` stands for. @internal */
export function stackIdCount(stack: Int32Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    if (stack[i] === RUN_MARK) {
      n += stack[i + 2]!;
      i += 2;
    } else n++;
  }
  return n;
}

export class PegAst {
  /** Root node ids: the parse result's top-level nodes (the reference's `result.nodes`). */
  readonly roots: readonly PegAstId[];
  /** @internal */ readonly input: Uint8Array;
  private readonly buf: AstBuffers;
  /** nodes that existed when this parse ended (a streaming session keeps adding to the buffers) */
  private readonly count: number;

  /** @internal */
  constructor(input: Uint8Array, roots: PegAstId[], buf: AstBuffers) {
    this.input = input;
    this.roots = roots;
    this.buf = buf;
    this.count = buf.size;
  }

  /** Number of nodes created during the parse (including ones on abandoned branches). */
  get size(): number {
    return this.count;
  }

  private check(id: PegAstId): void {
    if (!(id >= 0 && id < this.count)) throw new RangeError(`no AST node ${id}`);
  }

  rule(id: PegAstId): string {
    this.check(id);
    return this.buf.rule[id]!;
  }

  tag(id: PegAstId): string {
    this.check(id);
    return this.buf.tag[id]!;
  }

  start(id: PegAstId): number {
    this.check(id);
    return this.buf.start[id]!;
  }

  end(id: PegAstId): number {
    this.check(id);
    return this.buf.end[id]!;
  }

  isPartial(id: PegAstId): boolean {
    this.check(id);
    return (this.buf.flags[id]! & PARTIAL) !== 0;
  }

  children(id: PegAstId): PegAstId[] {
    this.check(id);
    const b = this.buf;
    const from = b.kidStart[id]!;
    const run = b.run[id]!;
    if (run === null) return b.kids.slice(from, from + b.kidCount[id]!);
    const out = b.kids.slice(from, from + run.at);
    for (let j = 0; j < run.n; j++) out.push(run.ids[j]!);
    for (let i = from + run.at, e = from + b.kidCount[id]!; i < e; i++) out.push(b.kids[i]!);
    return out;
  }

  /** Number of children of `id` (without building the list). */
  childCount(id: PegAstId): number {
    this.check(id);
    const run = this.buf.run[id]!;
    return this.buf.kidCount[id]! + (run === null ? 0 : run.n);
  }

  /** The `i`-th child of `id`. */
  child(id: PegAstId, i: number): PegAstId {
    this.check(id);
    const b = this.buf;
    const run = b.run[id]!;
    const from = b.kidStart[id]!;
    if (run !== null && i >= run.at) {
      if (i < run.at + run.n) return run.ids[i - run.at]!;
      i -= run.n;
    }
    if (!(i >= 0 && i < b.kidCount[id]!)) throw new RangeError(`AST node ${id} has no child ${i}`);
    return b.kids[from + i]!;
  }

  /**
   * Whether the node's parse never looked at the end of the input. Such a node holds for any longer
   * input: a stream parser's later parses that reach the same rule at the same position reuse it (same
   * id), so a consumer of successive streamed ASTs can skip what it already read under it.
   */
  isSettled(id: PegAstId): boolean {
    this.check(id);
    return (this.buf.flags[id]! & SETTLED) !== 0;
  }

  /** Whether the node or one of its descendants has a tag (false: a tag-driven reader can skip the subtree). */
  hasTags(id: PegAstId): boolean {
    this.check(id);
    return (this.buf.flags[id]! & TAGGED) !== 0;
  }

  /**
   * Identifies the node store: results of one stream parser share it (and their node ids) until the
   * parser starts over; a fresh parse has its own. Compare with `===`.
   */
  get store(): object {
    return this.buf;
  }

  /** Decoded text of a node (U+FFFD for incomplete or invalid UTF-8). */
  text(id: PegAstId): string {
    const start = this.start(id);
    return start < this.input.length ? utf8DecodeLossy(this.input, start, this.buf.end[id]!) : "";
  }

  /** Raw bytes of a node (a view, not a copy). */
  bytes(id: PegAstId): Uint8Array {
    return this.input.subarray(this.start(id), this.buf.end[id]!);
  }

  /** Byte ranges inside the node that are not whole UTF-8 characters (e.g. a character cut by the end of a stream). */
  invalidUtf8(id: PegAstId): Array<[number, number]> {
    return invalidUtf8Ranges(this.input, this.start(id), this.buf.end[id]!);
  }

  node(id: PegAstId): PegAstNode {
    return {
      id,
      rule: this.rule(id),
      tag: this.tag(id),
      start: this.start(id),
      end: this.end(id),
      text: this.text(id),
      isPartial: this.isPartial(id),
      children: this.children(id),
    };
  }

  /** Pre-order visit of the subtree at `id`, or of every root when `id` is omitted. */
  visit(visitor: (node: PegAstNode) => void, id?: PegAstId): void {
    const walk = (n: PegAstId): void => {
      visitor(this.node(n));
      for (const c of this.children(n)) walk(c);
    };
    if (id === undefined) for (const r of this.roots) walk(r);
    else walk(id);
  }

  /** First descendant (depth-first, at most `maxDepth` levels down) whose tag is `tag`; -1 if none. */
  findByTag(parent: PegAstId, tag: string, maxDepth = 3): PegAstId {
    return this.find(parent, (c) => this.buf.tag[c] === tag, maxDepth);
  }

  /** First descendant (depth-first, at most `maxDepth` levels down) whose rule is `rule`; -1 if none. */
  findByRule(parent: PegAstId, rule: string, maxDepth = 3): PegAstId {
    return this.find(parent, (c) => this.buf.rule[c] === rule, maxDepth);
  }

  private find(parent: PegAstId, pred: (id: PegAstId) => boolean, maxDepth: number): PegAstId {
    for (const c of this.children(parent)) {
      if (pred(c)) return c;
      if (maxDepth > 1) {
        const r = this.find(c, pred, maxDepth - 1);
        if (r !== -1) return r;
      }
    }
    return -1;
  }

  nodeToJSON(id: PegAstId): PegAstNodeJson {
    return {
      id,
      rule: this.rule(id),
      tag: this.tag(id),
      start: this.start(id),
      end: this.end(id),
      text: this.text(id),
      is_partial: this.isPartial(id),
      children: this.children(id).map((c) => this.nodeToJSON(c)),
    };
  }

  /** The result's trees, nested. */
  toJSON(): PegAstNodeJson[] {
    return this.roots.map((r) => this.nodeToJSON(r));
  }

  /** Indented text form, one node per line: `NODE id (rule r) (tag t) ['text']`. */
  dump(): string {
    const lines: string[] = [];
    const walk = (n: PegAstId, depth: number): void => {
      let s = `${"  ".repeat(depth)}NODE ${n}`;
      if (this.rule(n)) s += ` (rule ${this.rule(n)})`;
      if (this.tag(n)) s += ` (tag ${this.tag(n)})`;
      lines.push(`${s} ['${this.text(n)}']`);
      for (const c of this.children(n)) walk(c, depth + 1);
    };
    for (const r of this.roots) walk(r, 0);
    return lines.length ? lines.join("\n") + "\n" : "";
  }
}
