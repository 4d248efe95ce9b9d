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

export class PegAst {
  /** Root node ids: the parse result's top-level nodes (the reference's `result.nodes`). */
  readonly roots: readonly PegAstId[];
  /** @internal */ readonly input: Uint8Array;
  /** @internal */ readonly ruleOf: readonly string[];
  /** @internal */ readonly tagOf: readonly string[];
  /** @internal */ readonly startOf: readonly number[];
  /** @internal */ readonly endOf: readonly number[];
  /** @internal */ readonly partialOf: readonly boolean[];
  /** @internal */ readonly childrenOf: readonly (readonly PegAstId[])[];

  /** @internal */
  constructor(
    input: Uint8Array,
    roots: PegAstId[],
    ruleOf: string[],
    tagOf: string[],
    startOf: number[],
    endOf: number[],
    partialOf: boolean[],
    childrenOf: PegAstId[][],
  ) {
    this.input = input;
    this.roots = roots;
    this.ruleOf = ruleOf;
    this.tagOf = tagOf;
    this.startOf = startOf;
    this.endOf = endOf;
    this.partialOf = partialOf;
    this.childrenOf = childrenOf;
  }

  /** Number of nodes created during the parse (including ones on abandoned branches). */
  get size(): number {
    return this.ruleOf.length;
  }

  /** Decoded text of a node (U+FFFD for incomplete or invalid UTF-8). */
  text(id: PegAstId): string {
    const start = this.startOf[id]!;
    return start < this.input.length ? utf8DecodeLossy(this.input, start, this.endOf[id]!) : "";
  }

  /** Raw bytes of a node (a view, not a copy). */
  bytes(id: PegAstId): Uint8Array {
    return this.input.subarray(this.startOf[id]!, this.endOf[id]!);
  }

  /** Byte ranges inside the node that are not whole UTF-8 characters (e.g. a character cut by the end of a stream). */
  invalidUtf8(id: PegAstId): Array<[number, number]> {
    return invalidUtf8Ranges(this.input, this.startOf[id]!, this.endOf[id]!);
  }

  node(id: PegAstId): PegAstNode {
    return {
      id,
      rule: this.ruleOf[id]!,
      tag: this.tagOf[id]!,
      start: this.startOf[id]!,
      end: this.endOf[id]!,
      text: this.text(id),
      isPartial: this.partialOf[id]!,
      children: [...this.childrenOf[id]!],
    };
  }

  /** Pre-order visit of the subtree at `id`, or of every root when `id` is omitted. */
  visit(visitor: (node: PegAstNode) => void, id?: PegAstId): void {
    const walk = (n: PegAstId): void => {
      visitor(this.node(n));
      for (const c of this.childrenOf[n]!) walk(c);
    };
    if (id === undefined) for (const r of this.roots) walk(r);
    else walk(id);
  }

  /** First descendant (depth-first, at most `maxDepth` levels down) whose tag is `tag`; -1 if none. */
  findByTag(parent: PegAstId, tag: string, maxDepth = 3): PegAstId {
    return this.find(parent, (c) => this.tagOf[c] === tag, maxDepth);
  }

  /** First descendant (depth-first, at most `maxDepth` levels down) whose rule is `rule`; -1 if none. */
  findByRule(parent: PegAstId, rule: string, maxDepth = 3): PegAstId {
    return this.find(parent, (c) => this.ruleOf[c] === rule, maxDepth);
  }

  private find(parent: PegAstId, pred: (id: PegAstId) => boolean, maxDepth: number): PegAstId {
    for (const c of this.childrenOf[parent]!) {
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
      rule: this.ruleOf[id]!,
      tag: this.tagOf[id]!,
      start: this.startOf[id]!,
      end: this.endOf[id]!,
      text: this.text(id),
      is_partial: this.partialOf[id]!,
      children: this.childrenOf[id]!.map((c) => this.nodeToJSON(c)),
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
      if (this.ruleOf[n]) s += ` (rule ${this.ruleOf[n]})`;
      if (this.tagOf[n]) s += ` (tag ${this.tagOf[n]})`;
      lines.push(`${s} ['${this.text(n)}']`);
      for (const c of this.childrenOf[n]!) walk(c, depth + 1);
    };
    for (const r of this.roots) walk(r, 0);
    return lines.length ? lines.join("\n") + "\n" : "";
  }
}
