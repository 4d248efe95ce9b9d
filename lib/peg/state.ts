/**
 * The mutable state of one parse and the result codes every compiled parser returns. Shared by the
 * compiler (parse.ts) and the leaf matchers (leaves.ts).
 */
import { type AstBuffers, type PegAst, type PegAstId, RUN_MARK } from "./ast.js";
import { MemoTable } from "./memo.js";

export const FAIL = 0;
export const SUCCESS = 1;
export const NEED_MORE_INPUT = 2;
export type Status = typeof FAIL | typeof SUCCESS | typeof NEED_MORE_INPUT;

export type PegParseType = "fail" | "success" | "need_more_input";
export const TYPE_NAMES: readonly PegParseType[] = ["fail", "success", "need_more_input"];

export interface PegParseOptions {
  /**
   * The input may continue (streaming): parsers that reach the end of the input answer
   * `need_more_input` instead of failing. The reference's LENIENT flag. Default false (complete input).
   */
  partial?: boolean;
  /** Byte offset to start at (default 0). */
  start?: number;
  /** Trace every parser call: `true` writes to stderr, a function receives each line. */
  debug?: boolean | ((line: string) => void);
  /**
   * Read each byte that is not part of a well-formed UTF-8 sequence as one character U+FFFD, instead
   * of failing where a parser expects a character (the reference fails). Stray bytes in a model's
   * output then stay text (content, a string argument) rather than breaking the parse of what
   * follows. A sequence cut by the end of the input is still incomplete, not invalid. Default false.
   */
  lossyUtf8?: boolean;
}

export interface PegParseResult {
  type: PegParseType;
  /** byte offset the parse started at */
  start: number;
  /** byte offset where the root parser stopped (on failure: where the reference reports it) */
  end: number;
  /** the tagged tree; `ast.roots` are the result's top-level nodes */
  ast: PegAst;
}

/** Per-parse working memory that does not escape into the result, reused by the next parse. */
export class Scratch {
  readonly memo = new MemoTable(256);
  stack: Int32Array = new Int32Array(64);
  /** stream sessions: where repetitions can resume, addressed from the memo (see `repetition` in parse.ts) */
  readonly reps: RepetitionResume[] = [];
}

/**
 * The leading iterations of a repetition that never looked at the end of the input: they hold for
 * any longer input, so a later parse restarts the loop after them.
 */
export interface RepetitionResume {
  count: number;
  /** where the next iteration starts */
  pos: number;
  /** AST ids those iterations pushed, `ids[0..n)`; append-only (AST nodes share the prefix, see `KidRun`) */
  ids: Int32Array;
  n: number;
  /** one of those nodes has a tag (or a tagged descendant) */
  tagged: boolean;
}

/** Mutable state of one parse. One class so every closure sees the same object shape. */
export class ParseState {
  readonly input: Uint8Array;
  readonly len: number;
  readonly lenient: boolean;
  /** `lossyUtf8`: an invalid byte reads as U+FFFD (one byte long) */
  readonly lossy: boolean;
  /**
   * A stream-parser parse: the input extends the previous one of the same session, so scanning leaves
   * keep their results (and where an end-of-input scan stopped) in the memo across parses.
   */
  readonly incremental: boolean;
  /** end offset of the last result */
  end = 0;
  /**
   * Set whenever a parser observes the end of the input (a check `pos >= len` that came out true, a
   * cut UTF-8 character, a delimiter prefix at the end). Results computed without it depend only on
   * bytes before the end, so they hold for any longer input with the same prefix.
   */
  eof = false;
  /** where a leaf scan that observed the end of the input can resume on a longer input */
  resume = 0;
  /** set by every repetition loop: its leading iterations that did not see the end (parse.ts) */
  repCount = 0;
  repPos = 0;
  repSp = 0;
  /** AST ids produced by the parsers on the current path, `stack[0..sp)`; backtracking lowers `sp` */
  stack: Int32Array;
  sp = 0;

  /** packrat memo of rule results */
  readonly memo: MemoTable;
  readonly reps: RepetitionResume[];
  readonly ast: AstBuffers;
  readonly tmp = { cp: 0, len: 0 };
  readonly tmp2 = { cp: 0, len: 0 };
  depth = 0;
  readonly trace: ((line: string) => void) | undefined;

  constructor(
    input: Uint8Array,
    lenient: boolean,
    trace: ((line: string) => void) | undefined,
    scratch: Scratch,
    ast: AstBuffers,
    incremental = false,
    lossy = false,
  ) {
    this.input = input;
    this.len = input.length;
    this.lenient = lenient;
    this.lossy = lossy;
    this.incremental = incremental;
    this.trace = trace;
    this.memo = scratch.memo;
    this.reps = scratch.reps;
    this.stack = scratch.stack;
    this.ast = ast;
  }

  push(id: PegAstId): void {
    if (this.sp === this.stack.length) {
      const bigger = new Int32Array(this.stack.length * 2);
      bigger.set(this.stack);
      this.stack = bigger;
    }
    this.stack[this.sp++] = id;
  }

  /** Pushes a run marker: the first `n` ids of repetition entry `entry` (see `RUN_MARK`). */
  pushRun(entry: number, n: number): void {
    if (this.sp + 3 > this.stack.length) {
      const bigger = new Int32Array(this.stack.length * 2 + 3);
      bigger.set(this.stack);
      this.stack = bigger;
    }
    this.stack[this.sp++] = RUN_MARK;
    this.stack[this.sp++] = entry;
    this.stack[this.sp++] = n;
  }

  /**
   * Creates an AST node whose children are the ids above `mark` on the stack, and pops them.
   * `settled`: the node's parse did not look at the end of the input.
   */
  addNode(rule: string, tag: string, start: number, end: number, mark: number, partial: boolean, settled: boolean): PegAstId {
    const id = this.ast.add(rule, tag, start, end, partial, settled, this.stack, mark, this.sp, this.reps);
    this.sp = mark;
    return id;
  }

}

export type ParseFn = (s: ParseState, pos: number) => Status;

