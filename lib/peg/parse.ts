/**
 * Parsing: each arena node is compiled once into a closure `(state, pos) => status`; the closures call
 * each other through an array indexed by node id (so recursive rules need no special casing).
 *
 * Semantics follow llama.cpp's `parser_executor` exactly, including the end position it reports on
 * failure, because conformance tests compare both. Differences are in the mechanics only:
 * - rule results are memoized per (rule, position) (packrat), which bounds the work at
 *   O(rules x input) instead of exponential backtracking; the reference re-parses;
 * - AST node ids produced on the way to a result live on one shared stack instead of per-result vectors.
 */
import { LlamapegError } from "../errors.js";
import { AstBuffers, PegAst, TAGGED, expandStack, stackIdCount } from "./ast.js";
import { dumpNode } from "./dump.js";
import { type FirstSet, firstBytes } from "./first.js";
import { compileChars, compileStringContent, compileUntil } from "./leaves.js";
import { type PegNode, type PegNodeId, assertNeverNode } from "./nodes.js";
import {
  FAIL,
  NEED_MORE_INPUT,
  type ParseFn,
  ParseState,
  type PegParseOptions,
  type PegParseResult,
  type RepetitionResume,
  SUCCESS,
  Scratch,
  type Status,
  TYPE_NAMES,
} from "./state.js";
import { UTF8_INCOMPLETE, UTF8_INVALID, UTF8_SUCCESS, decodeUtf8At, isCSpace, utf8Encode, utf8Stray } from "./utf8.js";

export { FAIL, NEED_MORE_INPUT, SUCCESS, type PegParseOptions, type PegParseResult, type PegParseType } from "./state.js";

export class CompiledParser {
  private readonly fns: ParseFn[];
  private tracedFns: ParseFn[] | undefined;
  private readonly nodes: readonly PegNode[];
  private readonly scratchPool: Scratch[] = [];

  private readonly rules: ReadonlyMap<string, PegNodeId>;

  constructor(nodes: readonly PegNode[], rules: ReadonlyMap<string, PegNodeId>) {
    this.nodes = nodes;
    this.rules = rules;
    this.fns = compileAll(nodes, rules, false);
  }

  parse(root: PegNodeId, input: string | Uint8Array, options: PegParseOptions = {}): PegParseResult {
    // The memo table and stack are reused by the next parse (the memo is cleared in O(1)); a parse
    // started from inside another (a debug callback) gets its own.
    const scratch = this.scratchPool.pop() ?? new Scratch();
    scratch.memo.reset();
    try {
      return this.run(root, input, options, scratch, new AstBuffers());
    } finally {
      this.scratchPool.push(scratch);
    }
  }

  /**
   * Parses `input` as the continuation of the session's previous input: when it starts with the same
   * bytes (and the same mode), memoized rule results that never looked at the old end are reused
   * and the AST keeps growing in the same buffers. Otherwise the session starts over.
   */
  parseIncremental(session: IncrementalSession, root: PegNodeId, input: string | Uint8Array, options: PegParseOptions = {}): PegParseResult {
    const bytes = typeof input === "string" ? utf8Encode(input) : input;
    const prev = session.input;
    const continues = prev !== undefined && bytes.length >= prev.length && Buffer.compare(bytes.subarray(0, prev.length), prev) === 0;
    const result = this.parseSession(session, root, bytes, options, continues);
    session.remember(bytes, continues);
    return result;
  }

  /**
   * Parses the session's previous input followed by `piece`, without comparing the previous input
   * again (the session holds its own copy). The input parsed is `result.ast.input`.
   */
  extendIncremental(session: IncrementalSession, root: PegNodeId, piece: Uint8Array, options: PegParseOptions = {}): PegParseResult {
    const continues = session.input !== undefined;
    return this.parseSession(session, root, session.append(piece), options, continues);
  }

  private parseSession(session: IncrementalSession, root: PegNodeId, bytes: Uint8Array, options: PegParseOptions, extendsPrevious: boolean): PegParseResult {
    const partial = options.partial === true;
    const lossy = options.lossyUtf8 === true;
    const continues =
      extendsPrevious &&
      session.partial === partial &&
      session.lossy === lossy &&
      session.root === root &&
      (options.start ?? 0) === session.start &&
      // nodes of abandoned parses pile up in the shared buffers; start over once they dominate
      session.ast.size <= 4 * (bytes.length + 256) &&
      session.ast.kids.length <= 16 * (bytes.length + 256);
    if (continues) {
      session.scratch.memo.nextParse();
    } else {
      session.scratch.memo.reset();
      session.scratch.reps.length = 0;
      session.ast = new AstBuffers();
    }
    let result: PegParseResult;
    try {
      result = this.run(root, bytes, options, session.scratch, session.ast, true);
    } catch (e) {
      // the memo may hold entries computed on this input: the next parse must not trust them
      session.trusted = false;
      throw e;
    }
    session.trusted = true;
    session.partial = partial;
    session.lossy = lossy;
    session.root = root;
    session.start = options.start ?? 0;
    return result;
  }

  private run(root: PegNodeId, input: string | Uint8Array, options: PegParseOptions, scratch: Scratch, ast: AstBuffers, incremental = false): PegParseResult {
    const bytes = typeof input === "string" ? utf8Encode(input) : input;
    const start = options.start ?? 0;
    if (!Number.isInteger(start) || start < 0 || start > bytes.length) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `parse start ${start} is outside the input (0..${bytes.length})`, { where: "options.start" });
    }
    const trace = options.debug === true ? (line: string) => process.stderr.write(line + "\n") : options.debug || undefined;
    const fns = trace ? (this.tracedFns ??= compileAll(this.nodes, this.rules, true)) : this.fns;
    const s = new ParseState(bytes, options.partial === true, trace, scratch, ast, incremental, options.lossyUtf8 === true);
    let status: Status;
    try {
      status = fns[root]!(s, start);
    } catch (e) {
      if (e instanceof RangeError) {
        throw new LlamapegError("ERR_PEG_PARSE", `input nested too deeply for the parser stack (${e.message})`, { where: "parse", cause: e });
      }
      throw e;
    }
    const roots: number[] = new Array<number>(stackIdCount(s.stack, 0, s.sp));
    expandStack(s.stack, 0, s.sp, s.reps, roots, 0);
    scratch.stack = s.stack;
    return { type: TYPE_NAMES[status]!, start, end: s.end, ast: new PegAst(bytes, roots, s.ast) };
  }
}

/** State kept between the parses of a growing input (see `PegArena.streamParser`). */
export class IncrementalSession {
  readonly scratch = new Scratch();
  ast = new AstBuffers();
  /** the memo and AST buffers hold the parse of the held input (false: the next parse starts over) */
  trusted = false;
  partial = false;
  lossy = false;
  root = -1;
  start = 0;
  /** a copy of the input parsed last, `buf[0..len)`; grows by doubling, so each parse copies only the new bytes */
  private buf = new Uint8Array(0);
  private len = 0;

  /** The previous input when its parse can be continued, else undefined. */
  get input(): Uint8Array | undefined {
    return this.trusted ? this.buf.subarray(0, this.len) : undefined;
  }

  /** Forgets the previous input. */
  forget(): void {
    this.trusted = false;
    this.len = 0;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(n, 2 * this.buf.length, 1024));
    bigger.set(this.buf.subarray(0, this.len));
    this.buf = bigger;
  }

  /** Holds a copy of `bytes` (only the bytes past the previous input when it is their prefix). */
  remember(bytes: Uint8Array, extendsPrevious: boolean): void {
    const have = extendsPrevious ? this.len : 0;
    if (!extendsPrevious) this.len = 0;
    this.reserve(bytes.length);
    this.buf.set(bytes.subarray(have), have);
    this.len = bytes.length;
  }

  /**
   * Appends `piece` to the held input and returns the whole input (a view that later appends do not
   * change: they write past its end, or into a new buffer).
   */
  append(piece: Uint8Array): Uint8Array {
    this.reserve(this.len + piece.length);
    this.buf.set(piece, this.len);
    this.len += piece.length;
    return this.buf.subarray(0, this.len);
  }
}

/**
 * Compiles every node. With `traced`, every closure is wrapped to report its calls, and the closures
 * call each other through the wrapped array, so the trace covers every call, not just the root.
 */
function compileAll(nodes: readonly PegNode[], rules: ReadonlyMap<string, PegNodeId>, traced: boolean): ParseFn[] {
  const fns: ParseFn[] = new Array<ParseFn>(nodes.length);
  let ruleCount = 0;
  const ruleIndex = new Map<PegNodeId, number>();
  nodes.forEach((n, i) => {
    if (n.kind === "rule") ruleIndex.set(i, ruleCount++);
  });
  const first = firstBytes(nodes, rules);
  for (let id = 0; id < nodes.length; id++) {
    const fn = compileNode(nodes[id]!, id, fns, rules, ruleIndex.get(id) ?? 0, first);
    fns[id] = traced ? traceFn(fn, nodes, id) : fn;
  }
  return fns;
}

function traceFn(fn: ParseFn, nodes: readonly PegNode[], id: PegNodeId): ParseFn {
  const label = `${nodes[id]!.kind.toUpperCase()} #${id}`;
  return (s, pos) => {
    const pad = "  ".repeat(s.depth);
    s.trace!(`${pad}${label} at ${pos}: ${dumpNode(nodes, id).slice(0, 120)}`);
    s.depth++;
    const r = fn(s, pos);
    s.depth--;
    s.trace!(`${pad}-> ${TYPE_NAMES[r]} ${pos}..${s.end}`);
    return r;
  };
}

function compileNode(
  node: PegNode,
  id: PegNodeId,
  fns: ParseFn[],
  rules: ReadonlyMap<string, PegNodeId>,
  ruleIdx: number,
  first: readonly FirstSet[],
): ParseFn {
  switch (node.kind) {
    case "epsilon":
      return (s, pos) => {
        s.end = pos;
        return SUCCESS;
      };
    case "start":
      return (s, pos) => {
        s.end = pos;
        return pos === 0 ? SUCCESS : FAIL;
      };
    case "end":
      return (s, pos) => {
        s.end = pos;
        if (pos >= s.len) {
          s.eof = true;
          return SUCCESS;
        }
        return FAIL;
      };
    case "literal": {
      const lit = utf8Encode(node.text);
      const n = lit.length;
      return (s, pos) => {
        const inp = s.input;
        const len = s.len;
        let p = pos;
        for (let i = 0; i < n; i++) {
          if (p >= len) {
            s.eof = true;
            if (!s.lenient) {
              s.end = pos;
              return FAIL;
            }
            s.end = p;
            return NEED_MORE_INPUT;
          }
          if (inp[p] !== lit[i]) {
            s.end = pos;
            return FAIL;
          }
          p++;
        }
        s.end = p;
        return SUCCESS;
      };
    }
    case "sequence": {
      const children = node.children.slice();
      const n = children.length;
      // Children's closures, looked up once on first use (all closures exist by then).
      let kids: ParseFn[] | undefined;
      return (s, pos) => {
        const ks = (kids ??= children.map((c) => fns[c]!));
        const mark = s.sp;
        let p = pos;
        for (let i = 0; i < n; i++) {
          const r = ks[i]!(s, p);
          if (r === FAIL) {
            s.sp = mark;
            return FAIL; // end: where the failing child stopped, as the reference reports
          }
          if (r === NEED_MORE_INPUT) return NEED_MORE_INPUT;
          p = s.end;
        }
        s.end = p;
        return SUCCESS;
      };
    }
    case "choice": {
      const children = node.children.slice();
      const n = children.length;
      // An alternative whose first-byte set excludes the next byte would fail: skip the call.
      const sets = children.map((c) => first[c] ?? null);
      let kids: ParseFn[] | undefined;
      return (s, pos) => {
        const ks = (kids ??= children.map((c) => fns[c]!));
        const b = pos < s.len ? s.input[pos]! : -1;
        for (let i = 0; i < n; i++) {
          const fs = sets[i];
          if (b >= 0 && fs !== null && fs![b] === 0) continue;
          const r = ks[i]!(s, pos);
          if (r !== FAIL) return r;
        }
        s.end = pos;
        return FAIL;
      };
    }
    case "repetition": {
      const { child, min, max } = node;
      const loop = compileRepetitionLoop(min, max, child, fns);
      return (s, pos) => (s.incremental ? resumeRepetition(s, pos, id, loop) : loop(s, pos, s.sp, pos, 0));
    }
    case "and": {
      const child = node.child;
      return (s, pos) => {
        const mark = s.sp;
        const r = fns[child]!(s, pos);
        s.sp = mark;
        s.end = pos;
        return r;
      };
    }
    case "not": {
      const child = node.child;
      return (s, pos) => {
        const mark = s.sp;
        const r = fns[child]!(s, pos);
        s.sp = mark;
        s.end = pos;
        return r === SUCCESS ? FAIL : r === NEED_MORE_INPUT ? NEED_MORE_INPUT : SUCCESS;
      };
    }
    case "any":
      return (s, pos) => {
        const st = decodeUtf8At(s.input, pos, s.tmp);
        if (st !== UTF8_SUCCESS && s.lossy && pos < s.len && (st === UTF8_INVALID || utf8Stray(s.input, pos))) {
          s.end = pos + 1; // a stray byte reads as U+FFFD
          return SUCCESS;
        }
        if (st === UTF8_INCOMPLETE) {
          s.eof = true;
          s.end = pos;
          return s.lenient ? NEED_MORE_INPUT : FAIL;
        }
        if (st === UTF8_INVALID) {
          s.end = pos;
          return FAIL;
        }
        s.end = pos + s.tmp.len;
        return SUCCESS;
      };
    case "space":
      return (s, pos) => {
        const inp = s.input;
        const len = s.len;
        let p = pos;
        while (p < len && isCSpace(inp[p]!)) p++;
        if (p >= len) s.eof = true;
        s.end = p;
        return SUCCESS;
      };
    case "chars":
      return compileChars(node);
    case "string":
      return compileStringContent(node.delimiter, id);
    case "until":
      return compileUntil(node.delimiters, id);
    case "schema":
    case "gbnf":
    case "ac": {
      const child = node.child;
      return (s, pos) => fns[child]!(s, pos);
    }
    case "rule": {
      const { child, name } = node;
      return (s, pos) => {
        const memo = s.memo;
        if (memo.find(ruleIdx, pos)) {
          s.end = memo.end;
          if (memo.eof) s.eof = true;
          if (memo.status !== FAIL) s.push(memo.node);
          return memo.status as Status;
        }
        const mark = s.sp;
        const outerEof = s.eof;
        s.eof = false;
        const r = fns[child]!(s, pos);
        const sawEof = s.eof;
        s.eof = outerEof || sawEof;
        let nodeId = -1;
        if (r !== FAIL) {
          nodeId = s.addNode(name, "", pos, s.end, mark, r === NEED_MORE_INPUT, !sawEof);
          s.push(nodeId);
        }
        memo.insert(ruleIdx, pos, r, s.end, nodeId, sawEof);
        return r;
      };
    }
    case "tag": {
      const { child, tag } = node;
      // Inside a stream session a tag's result is memoized like a rule's (key `-1 - id`), so a settled
      // tagged node keeps its id across parses and a reader of successive ASTs can tell it is the same.
      const key = -1 - id;
      return (s, pos) => {
        const memo = s.memo;
        if (s.incremental && memo.find(key, pos)) {
          s.end = memo.end;
          if (memo.eof) s.eof = true;
          if (memo.status !== FAIL) s.push(memo.node);
          return memo.status as Status;
        }
        const mark = s.sp;
        const outerEof = s.eof;
        s.eof = false;
        const r = fns[child]!(s, pos);
        const sawEof = s.eof;
        s.eof = outerEof || sawEof;
        let nodeId = -1;
        if (r !== FAIL) {
          nodeId = s.addNode("", tag, pos, s.end, mark, r === NEED_MORE_INPUT, !sawEof);
          s.push(nodeId);
        }
        if (s.incremental) memo.insert(key, pos, r, s.end, nodeId, sawEof);
        return r;
      };
    }
    case "ref": {
      const target = rules.get(node.name);
      if (target === undefined) {
        const name = node.name;
        return () => {
          throw new LlamapegError("ERR_PEG_INVALID", `rule not found: ${name}`, { where: `parsers/${id}` });
        };
      }
      return (s, pos) => fns[target]!(s, pos);
    }
    case "atomic": {
      const child = node.child;
      return (s, pos) => {
        const mark = s.sp;
        const r = fns[child]!(s, pos);
        if (r === NEED_MORE_INPUT) s.sp = mark; // partial output is not wanted from an atomic parser
        return r;
      };
    }
    default:
      return assertNeverNode(node);
  }
}

/**
 * The loop of a repetition, entered after `count` iterations that end at `p` (0 and `pos` unless a
 * stream session resumes it). `mark` is the stack height before the repetition. On return,
 * `s.repCount`/`s.repPos`/`s.repSp` describe the leading iterations that did not see the end of the
 * input (only meaningful when `s.eof` was false on entry, as in `resumeRepetition`).
 */
type RepetitionLoop = (s: ParseState, pos: number, mark: number, p: number, count: number) => Status;

function compileRepetitionLoop(min: number, max: number, child: PegNodeId, fns: ParseFn[]): RepetitionLoop {
  return (s, _pos, mark, p, count) => {
    const fn = fns[child]!;
    let stableCount = count;
    let stablePos = p;
    let stableSp = s.sp;
    let r: Status = SUCCESS;
    while (max === -1 || count < max) {
      if (p >= s.len) {
        s.eof = true;
        break;
      }
      const before = s.sp;
      const cr = fn(s, p);
      if (cr === SUCCESS) {
        if (s.end === p) {
          // empty match: stop, and drop what it produced (as the reference does)
          s.sp = before;
          break;
        }
        p = s.end;
        count++;
        if (!s.eof) {
          stableCount = count;
          stablePos = p;
          stableSp = s.sp;
        }
        continue;
      }
      if (cr === NEED_MORE_INPUT) r = NEED_MORE_INPUT;
      break;
    }
    // written last: the child's own repetitions use the same fields
    s.repCount = stableCount;
    s.repPos = stablePos;
    s.repSp = stableSp;
    if (r === NEED_MORE_INPUT) return NEED_MORE_INPUT;
    if (min > 0 && count < min) {
      if (p >= s.len && s.lenient) {
        s.end = p;
        return NEED_MORE_INPUT;
      }
      s.sp = mark;
      s.end = p;
      return FAIL;
    }
    s.end = p;
    return SUCCESS;
  };
}

/**
 * A repetition inside a stream session: its leading iterations that did not look at the end of the
 * input hold for every longer input, so they are kept (count, end, AST ids) in `s.reps`, addressed
 * through the memo (key `-1 - id`), and a later call at the same position pushes their AST ids and
 * continues the loop after them instead of stepping over each (a JSON object's finished members, a
 * transcript's finished tool calls).
 */
function resumeRepetition(s: ParseState, pos: number, id: PegNodeId, loop: RepetitionLoop): Status {
  const memo = s.memo;
  const key = -1 - id;
  const mark = s.sp;
  let entry: RepetitionResume | undefined;
  let entryIndex = -1;
  let p = pos;
  let count = 0;
  if (memo.findAny(key, pos)) {
    entryIndex = memo.node;
    entry = s.reps[entryIndex]!;
    // one marker for the entry's ids: its parent node shares them instead of copying (KidRun)
    if (entry.n > 0) s.pushRun(entryIndex, entry.n);
    p = entry.pos;
    count = entry.count;
  }
  const base = s.sp;
  const outerEof = s.eof;
  s.eof = false;
  const r = loop(s, pos, mark, p, count);
  s.eof = outerEof || s.eof;
  if (s.repCount > count) {
    // the stable iterations this call added are stack[base..repSp): append their ids to the entry
    const add = stackIdCount(s.stack, base, s.repSp);
    if (entry === undefined) {
      entry = { count: 0, pos, ids: new Int32Array(Math.max(16, add)), n: 0, tagged: false };
      memo.insert(key, pos, FAIL, pos, s.reps.length, false);
      s.reps.push(entry);
    } else if (entry.ids.length < entry.n + add) {
      // a new array: AST nodes made earlier keep the old one (its first `n` ids never change)
      const bigger = new Int32Array(Math.max(entry.n + add, 2 * entry.ids.length));
      bigger.set(entry.ids.subarray(0, entry.n));
      entry.ids = bigger;
    }
    const n = expandStack(s.stack, base, s.repSp, s.reps, entry.ids, entry.n);
    if (!entry.tagged) {
      const flags = s.ast.flags;
      for (let i = entry.n; i < n; i++) if ((flags[entry.ids[i]!]! & TAGGED) !== 0) entry.tagged = true;
    }
    entry.n = n;
    entry.count = s.repCount;
    entry.pos = s.repPos;
  }
  return r;
}
