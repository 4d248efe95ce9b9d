/**
 * The mapper for a stream: maps each streamed AST to the message so far while visiting only what the
 * last piece could have changed, with the same result as `mapChatAst` on the whole AST.
 *
 * A stream parser's ASTs share their settled nodes (nodes whose parse never looked at the end of the
 * input keep their ids from parse to parse). The mapper walks the AST in document order and keeps a
 * checkpoint where the settled part ends: the mapper state there, and the path to it (per level, the
 * ids of the settled children already mapped, and the open node the path goes down into, which must
 * carry no text of its own). The next frame checks that the new AST has the same ids along that path,
 * resumes the state machine from the checkpoint, and moves the checkpoint past whatever has settled
 * since. Only the open tail (usually one growing text node and its few open ancestors) is mapped
 * again, and its text comes from `RangeTexts`, which decodes only the new bytes. Anything that does
 * not line up (the parser started over, the tree took another branch) maps the whole AST.
 *
 * Each frame also yields its fields' segment views, so `diff.ts` can compare it with the previous
 * frame without reading the texts.
 */
import type { PegAst } from "../peg/ast.js";
import { type MessageView } from "./diff.js";
import { type CallState, MAPPED_TAGS, MapperCore, type NodeReader } from "./mapper.js";
import { emptyAssistantMessage, type AssistantMessage } from "./messages.js";
import { TAG } from "./tags.js";
import { Field, RangeTexts, TF_PLAIN, completeUtf8Prefix, decodeRange } from "./text-fields.js";

interface Level {
  /** node whose children this level lists (-1: the roots); the id it had in the last frame */
  parent: number;
  /** the first `ids.length` children are mapped into the checkpoint state */
  ids: number[];
  /** above the deepest level: the open node at index `ids.length` the path goes into */
  pathTag: string;
  pathStart: number;
  /** that node is a tool-args read for its text (its end counts in `consumed`, nothing else) */
  pathReads: boolean;
}

/** The mapper state at a checkpoint (fields frozen). */
interface Snapshot {
  reasoning: Field;
  content: Field;
  argsBuffer: Field;
  calls: CallState[];
  /** index of the current call in `calls`, -1 when it is not visible (pending or dropped) */
  currentIndex: number;
  current: CallState | null;
  pendingIsCurrent: boolean;
  argCount: number;
  quotePending: boolean;
  consumed: number;
}

export interface StreamFrame {
  message: AssistantMessage;
  /** Input bytes whose text went into the message (the largest end of a node whose text was read). */
  consumed: number;
  /** The fields' segments relative to where this frame started: compare with `previous.view`. */
  view: MessageView;
  /** The frame before this one (null for the first), and its fields relative to the same start. */
  previous: { message: AssistantMessage; view: MessageView } | null;
}

/** Transparent: mapping the node does nothing (READS: only its end counts in `consumed`). */
const OPAQUE = 0;
const TRANSPARENT = 1;
const READS = 2;

/** The reader and state machine of one frame (one per mapper, re-aimed at each frame's AST). */
class Walk {
  consumed = 0;
  ast!: PegAst;
  bytes!: Uint8Array;
  partial = true;
  readonly core: MapperCore<number>;

  constructor(readonly ranges: RangeTexts) {
    const reader: NodeReader<number> = {
      text: (id) => {
        const end = this.ast.end(id);
        if (end > this.consumed) this.consumed = end;
        return decodeRange(this.bytes, this.ast.start(id), end, this.partial);
      },
      piece: (id, tf) => {
        const end = this.ast.end(id);
        if (end > this.consumed) this.consumed = end;
        return this.ranges.read(this.bytes, this.ast.start(id), end, this.partial, tf);
      },
    };
    this.core = new MapperCore(reader, true);
  }

  /** Aims at a new frame, with the state machine at its start. */
  begin(ast: PegAst, bytes: Uint8Array, partial: boolean): void {
    this.ast = ast;
    this.bytes = bytes;
    this.partial = partial;
    this.consumed = 0;
    const core = this.core;
    core.reasoning = new Field(true);
    core.content = new Field(true);
    core.argsBuffer = new Field(true);
    core.calls = [];
    core.pending = null;
    core.current = null;
    core.argCount = 0;
    core.quotePending = false;
  }

  /** Maps the subtree at `id` (tagged nodes only; untagged subtrees are skipped). */
  subtree(id: number): void {
    const { ast, core } = this;
    const stack = [id];
    while (stack.length > 0) {
      const n = stack.pop()!;
      const tag = ast.tag(n);
      if (tag !== "") core.map(tag, n);
      for (let i = ast.childCount(n) - 1; i >= 0; i--) {
        const c = ast.child(n, i);
        if (ast.hasTags(c)) stack.push(c);
      }
    }
  }

  /** What mapping `id` now would do: nothing, only a read that counts in `consumed`, or more. */
  transparency(id: number): number {
    const tag = this.ast.tag(id);
    if (!MAPPED_TAGS.has(tag)) return TRANSPARENT;
    if (tag !== TAG.TOOL_ARGS) return OPAQUE;
    if (this.core.current === null) return TRANSPARENT;
    // tool-args sets the arguments only when its text starts with "{"; decide on a decoded first character
    const start = this.ast.start(id);
    const head = decodeRange(this.bytes, start, Math.min(this.ast.end(id), start + 8), this.partial && this.ast.end(id) <= start + 8);
    return head.length > 0 && head[0] !== "{" ? READS : OPAQUE;
  }
}

/** One walk frame: the children of `parent` (-1: roots) from `next`; `level` when on the checkpoint path. */
interface Frame {
  parent: number;
  next: number;
  count: number;
  level: number;
}

export class StreamMapper {
  private readonly ranges = new RangeTexts();
  private readonly walk = new Walk(this.ranges);
  private store: object | null = null;
  private levels: Level[] = [];
  private snap: Snapshot | null = null;
  private last: { message: AssistantMessage; view: MessageView } | null = null;
  private nextBase = 1;

  /** Maps one streamed AST (`ast.input` is `bytes`), reusing the previous frame's checkpoint where it still holds. */
  map(ast: PegAst, bytes: Uint8Array, partial: boolean): StreamFrame {
    const walk = this.walk;
    walk.begin(ast, bytes, partial);
    const tailClean = completeUtf8Prefix(bytes, bytes.length) === bytes.length;
    // a settled node can be mapped once and for all unless its text ends in a character the end of
    // the input cuts (a later frame would show that character)
    const committable = (id: number): boolean => ast.isSettled(id) && (tailClean || ast.end(id) < bytes.length);

    let pathConsumed = 0;
    const frames: Frame[] = [];
    const path = this.snap !== null && ast.store === this.store ? this.validate(ast) : null;
    if (path !== null) {
      this.restore(walk.core, this.snap!);
      walk.consumed = this.snap!.consumed;
      const d = this.levels.length - 1;
      for (let l = 0; l <= d; l++) {
        const parent = l === 0 ? -1 : path[l - 1]!;
        const lv = this.levels[l]!;
        lv.parent = parent;
        if (l < d && lv.pathReads) pathConsumed = Math.max(pathConsumed, ast.end(path[l]!));
        frames.push({ parent, next: lv.ids.length + (l < d ? 1 : 0), count: parent < 0 ? ast.roots.length : ast.childCount(parent), level: l });
      }
    } else {
      this.levels = [{ parent: -1, ids: [], pathTag: "", pathStart: 0, pathReads: false }];
      this.snap = null;
      frames.push({ parent: -1, next: 0, count: ast.roots.length, level: 0 });
    }
    this.store = ast.store;

    let committing = true;
    let moved = path === null;
    const checkpoint = (): void => {
      committing = false;
      if (moved || this.snap === null) this.snap = this.snapshot(walk);
    };
    while (frames.length > 0) {
      const top = frames[frames.length - 1]!;
      if (top.next >= top.count) {
        frames.pop();
        if (!committing) continue;
        if (top.level > 0) {
          const a = top.parent;
          if (committable(a)) {
            // the open node the path went into has settled: it joins its parent's mapped children
            const up = this.levels[top.level - 1]!;
            if (up.pathReads) walk.consumed = Math.max(walk.consumed, ast.end(a));
            this.levels.length = top.level;
            up.ids.push(a);
            up.pathTag = "";
            up.pathReads = false;
            moved = true;
            continue;
          }
        }
        checkpoint();
        continue;
      }
      const c = top.parent < 0 ? ast.roots[top.next]! : ast.child(top.parent, top.next);
      top.next++;
      if (!committing) {
        if (ast.hasTags(c)) walk.subtree(c);
        continue;
      }
      if (committable(c)) {
        if (ast.hasTags(c)) walk.subtree(c);
        this.levels[top.level]!.ids.push(c);
        moved = true;
        continue;
      }
      const kind = ast.hasTags(c) ? walk.transparency(c) : OPAQUE;
      if (kind !== OPAQUE) {
        // an open node with nothing of its own to map: the checkpoint can go inside it
        const lv = this.levels[top.level]!;
        lv.pathTag = ast.tag(c);
        lv.pathStart = ast.start(c);
        lv.pathReads = kind === READS;
        if (kind === READS) pathConsumed = Math.max(pathConsumed, ast.end(c));
        this.levels.push({ parent: c, ids: [], pathTag: "", pathStart: 0, pathReads: false });
        frames.push({ parent: c, next: 0, count: ast.childCount(c), level: this.levels.length - 1 });
        continue;
      }
      checkpoint();
      if (ast.hasTags(c)) walk.subtree(c);
    }
    if (committing) checkpoint();

    const core = walk.core;
    core.flush();
    const message = core.message();
    const view = viewOf(core, false);
    const previous = this.last;
    this.last = { message, view: viewOf(core, true) };
    this.ranges.endFrame();
    return { message, consumed: Math.max(walk.consumed, pathConsumed), view, previous };
  }

  /**
   * The nodes the checkpoint path goes through in `ast` (one per level above the deepest), or null
   * when the AST no longer has the checkpoint's mapped children in the same places.
   */
  private validate(ast: PegAst): number[] | null {
    const path: number[] = [];
    const levels = this.levels;
    let parent = -1;
    for (let l = 0; l < levels.length; l++) {
      const lv = levels[l]!;
      const n = lv.ids.length;
      const deepest = l === levels.length - 1;
      const count = parent < 0 ? ast.roots.length : ast.childCount(parent);
      if (count < n + (deepest ? 0 : 1)) return null;
      // the same parent node has the same children
      if (parent < 0 || parent !== lv.parent) {
        for (let i = 0; i < n; i++) if ((parent < 0 ? ast.roots[i]! : ast.child(parent, i)) !== lv.ids[i]) return null;
      }
      if (deepest) break;
      const a = parent < 0 ? ast.roots[n]! : ast.child(parent, n);
      if (ast.tag(a) !== lv.pathTag || !ast.hasTags(a)) return null;
      if (lv.pathReads && ast.start(a) !== lv.pathStart) return null;
      path.push(a);
      parent = a;
    }
    return path;
  }

  private snapshot(walk: Walk): Snapshot {
    const core = walk.core;
    const freeze = (f: Field): Field => f.freezeAt(this.nextBase++);
    const frozenCall = (c: CallState): CallState => (c !== core.current && !c.args.hasSegments ? c : { id: c.id, name: c.name, args: freeze(c.args) });
    const calls = core.calls.map(frozenCall);
    const currentIndex = core.current === null ? -1 : core.calls.indexOf(core.current);
    return {
      reasoning: freeze(core.reasoning),
      content: freeze(core.content),
      argsBuffer: freeze(core.argsBuffer),
      calls,
      currentIndex,
      current: currentIndex >= 0 ? calls[currentIndex]! : core.current === null ? null : frozenCall(core.current),
      pendingIsCurrent: core.pending !== null && core.pending === core.current,
      argCount: core.argCount,
      quotePending: core.quotePending,
      consumed: walk.consumed,
    };
  }

  private restore(core: MapperCore<number>, s: Snapshot): void {
    core.reasoning = s.reasoning.clone();
    core.content = s.content.clone();
    core.argsBuffer = s.argsBuffer.clone();
    core.calls = s.calls.slice();
    const cur = s.current === null ? null : { id: s.current.id, name: s.current.name, args: s.current.args.clone() };
    if (s.currentIndex >= 0) core.calls[s.currentIndex] = cur!;
    core.current = cur;
    core.pending = s.pendingIsCurrent ? cur : null;
    core.argCount = s.argCount;
    core.quotePending = s.quotePending;
  }
}

function viewOf(core: MapperCore<number>, forNext: boolean): MessageView {
  const v = (f: Field) => (forNext ? f.viewForNext() : f.view());
  return { reasoning: v(core.reasoning), content: v(core.content), calls: core.calls.map((c) => ({ name: c.name, args: v(c.args) })) };
}

/** The same for a plan without a parser: the whole output after the generation prompt is content. */
export class ContentStream {
  private readonly ranges = new RangeTexts();
  private last: { message: AssistantMessage; view: MessageView } | null = null;

  constructor(private readonly skip: number) {}

  map(bytes: Uint8Array, partial: boolean): StreamFrame {
    const start = Math.min(this.skip, bytes.length);
    const content = new Field(true);
    content.append(this.ranges.read(bytes, start, bytes.length, partial, TF_PLAIN));
    const message = emptyAssistantMessage();
    message.content = content.str;
    const empty = new Field(true).view();
    const view: MessageView = { reasoning: empty, content: content.view(), calls: [] };
    const previous = this.last;
    this.last = { message, view };
    this.ranges.endFrame();
    return { message, consumed: bytes.length, view, previous };
  }
}
