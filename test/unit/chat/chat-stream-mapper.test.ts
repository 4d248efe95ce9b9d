/**
 * The streaming mapper and the view-based diff give exactly what a fresh parse + `mapChatAst` +
 * `diffMessages` give, frame by frame, for random chunkings of valid, broken and mutated outputs of
 * every hand-built chat grammar (stray invalid UTF-8 included); and its cost per frame stays flat.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareViews, diffChange, diffMessages, extensionProblem } from "../../../lib/chat/diff.js";
import type { AssistantMessage, ChatDelta } from "../../../lib/chat/messages.js";
import { hasFormatMapper, runChatParser } from "../../../lib/chat/parse.js";
import { chatPlan, type ChatPlan } from "../../../lib/chat/plan.js";
import { ContentStream, type StreamFrame, StreamMapper } from "../../../lib/chat/stream-mapper.js";
import { buildChatPegParser } from "../../../lib/chat/grammar/builder.js";
import type { PegArena } from "../../../lib/peg/arena.js";
import { GRAMMARS } from "../../fixtures/chat/grammars.js";

const encoder = new TextEncoder();

/** What diffMessages gives (or the error it throws), for comparing two ways of computing it. */
function deltasOrError(f: () => ChatDelta[]): unknown {
  try {
    return f();
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/**
 * Feeds the prefixes of `bytes` ending at `ends` to a stream parser + StreamMapper and checks every
 * frame; the stream parser starts over before the frames in `resets` (new node store).
 */
function checkFrames(arena: PegArena, generationPrompt: string, bytes: Uint8Array, ends: number[], resets: ReadonlySet<number> = new Set()): number {
  const prompt = encoder.encode(generationPrompt);
  const input = new Uint8Array(prompt.length + bytes.length);
  input.set(prompt);
  input.set(bytes, prompt.length);
  const fresh: ChatPlan = chatPlan({ parse: (i, o) => arena.parse(i, o) }, { generationPrompt });
  const sp = arena.streamParser();
  const mapper = new StreamMapper();
  let frames = 0;
  let prev: StreamFrame | null = null;
  for (const [k, end] of ends.entries()) {
    if (resets.has(k)) sp.reset();
    const at = input.subarray(0, prompt.length + end);
    const want = runChatParser(fresh, at, true);
    const result = sp.parse(at, { partial: true, lossyUtf8: true });
    expect(result.type).toBe(want.result!.type);
    if (result.type === "fail") break; // the session streams the rest as content from here on
    const frame = mapper.map(result.ast, at, true);
    expect(frame.message, `frame at ${end}`).toEqual(want.message);
    expect(frame.consumed, `consumed at ${end}`).toBe(want.consumed);
    frames++;
    if (prev !== null) {
      expect(frame.previous!.message).toBe(prev.message);
      const change = compareViews(frame.previous!.view, frame.view);
      const p = prev.message;
      const n = frame.message;
      expect(deltasOrError(() => diffChange(p, n, change)), `deltas at ${end}`).toEqual(deltasOrError(() => diffMessages(p, n)));
      expect(extensionProblem(p, n, change), `extension at ${end}`).toBe(extensionProblem(p, n));
    }
    prev = frame;
  }
  return frames;
}

/** Sorted distinct prefix lengths from cut points (the whole output last; a repeated length re-parses the same input). */
function endsFrom(length: number, cuts: number[], repeat: boolean): number[] {
  const ends = [...new Set(cuts.map((c) => c % (length + 1)))].sort((a, b) => a - b);
  if (repeat && ends.length > 0) ends.splice(ends.length >> 1, 0, ends[ends.length >> 1]!);
  ends.push(length);
  return ends;
}

/** Stray bytes a model can write: lone continuation bytes, a cut lead, a lead followed by ASCII. */
const STRAY = [[0x80], [0xff], [0xc3], [0xe2, 0x82], [0xe2, 0x41], [0xf0, 0x9f, 0x98]];

function mutate(text: string, muts: [string, number, number, number, number][], texts: string[]): Uint8Array {
  let bytes = encoder.encode(text);
  for (const [kind, at, len, from, other] of muts) {
    const i = at % (bytes.length + 1);
    const j = Math.min(bytes.length, i + len);
    let insert: Uint8Array;
    if (kind === "delete") insert = new Uint8Array(0);
    else if (kind === "repeat") insert = bytes.slice(i, j);
    else if (kind === "stray") insert = Uint8Array.from(STRAY[from % STRAY.length]!);
    else {
      const src = encoder.encode(texts[other % texts.length]!);
      const k = from % (src.length + 1);
      insert = src.slice(k, k + len);
    }
    const cutTo = kind === "delete" ? j : kind === "repeat" ? j : i;
    const head = bytes.slice(0, kind === "repeat" ? j : i);
    const tail = bytes.slice(cutTo);
    const out = new Uint8Array(head.length + insert.length + tail.length);
    out.set(head);
    out.set(insert, head.length);
    out.set(tail, head.length + insert.length);
    bytes = out;
  }
  return bytes;
}

describe("StreamMapper = fresh parse + mapChatAst, and compareViews + diffChange = diffMessages", () => {
  for (const g of GRAMMARS.filter((x) => !hasFormatMapper(x.format ?? "peg-native"))) {
    describe(g.name, () => {
      const arena = g.build();
      const texts = [...g.valid, ...g.broken];

      it("every byte prefix of every sample output", () => {
        let frames = 0;
        for (const text of texts) {
          const bytes = encoder.encode(text);
          frames += checkFrames(arena, g.generationPrompt, bytes, [...Array(bytes.length + 1).keys()]);
        }
        expect(frames).toBeGreaterThan(texts.length);
      });

      it("random chunkings of mutated outputs (cuts, repeats, fragments of other outputs, stray bytes)", () => {
        const mutation = fc.tuple(fc.constantFrom("delete", "repeat", "insert", "stray"), fc.nat(), fc.nat(40), fc.nat(), fc.nat());
        fc.assert(
          fc.property(
            fc.nat(texts.length - 1),
            fc.array(mutation, { maxLength: 3 }),
            fc.array(fc.nat(), { maxLength: 30 }),
            fc.boolean(),
            fc.array(fc.nat(30), { maxLength: 2 }),
            (which, muts, cuts, repeat, resets) => {
              const bytes = mutate(texts[which]!, muts, texts);
              checkFrames(arena, g.generationPrompt, bytes, endsFrom(bytes.length, cuts, repeat), new Set(resets));
            },
          ),
          { numRuns: 80 },
        );
      });
    });
  }
});

describe("StreamMapper checkpoints", () => {
  it("a later byte that sends the parse down another branch drops the checkpoint", () => {
    // "ab" is content while the X branch is open; "abY" makes it reasoning
    const arena = buildChatPegParser((p) =>
      p.alt(p.seq(p.content(p.literal("ab")), p.literal("X"), p.content(p.until("\n"))), p.seq(p.reasoning(p.literal("ab")), p.literal("Y"), p.content(p.rest()))),
    );
    for (const text of ["abXcd\n", "abYcd"]) {
      const bytes = encoder.encode(text);
      expect(checkFrames(arena, "", bytes, [...Array(bytes.length + 1).keys()])).toBe(bytes.length + 1);
    }
    const sp = arena.streamParser();
    const mapper = new StreamMapper();
    expect(mapper.map(sp.parse("abX", { partial: true }).ast, encoder.encode("abX"), true).message.content).toBe("ab");
    const m = mapper.map(sp.parse("abYc", { partial: true }).ast, encoder.encode("abYc"), true).message;
    expect([m.reasoning_content, m.content]).toEqual(["ab", "c"]);
  });
});

describe("ContentStream (plans without a parser)", () => {
  it("gives the content a fresh decode gives, and diffs like diffMessages", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), fc.array(fc.nat(), { maxLength: 12 }), fc.constantFrom("", "<|assistant|>"), (bytes, cuts, gp) => {
        const plan = chatPlan(null, { generationPrompt: gp });
        const prompt = encoder.encode(gp);
        const cs = new ContentStream(prompt.length);
        let prev: AssistantMessage | null = null;
        for (const end of endsFrom(bytes.length, cuts, false)) {
          const input = new Uint8Array(prompt.length + end);
          input.set(prompt);
          input.set(bytes.subarray(0, end), prompt.length);
          const f = cs.map(input, true);
          expect(f.message).toEqual(runChatParser(plan, input, true).message);
          if (prev !== null) expect(diffChange(prev, f.message, compareViews(f.previous!.view, f.view))).toEqual(diffMessages(prev, f.message));
          prev = f.message;
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe("StreamMapper cost", () => {
  it("maps a frame of a long streamed tool call with a bounded number of text reads, whatever its length", () => {
    const g = GRAMMARS.find((x) => x.name.startsWith("json-native, per-call markers"))!;
    const arena = g.build();
    const valid = g.valid.find((t) => t.includes("arguments"))!;
    const at = valid.indexOf('"', valid.indexOf(":", valid.indexOf("arguments")) + 1);
    const head = valid.slice(0, at + 1);
    expect(head.length).toBeGreaterThan(10);
    const sp = arena.streamParser();
    const mapper = new StreamMapper();
    const reads: number[] = [];
    let text = g.generationPrompt + head;
    for (let i = 0; i < 3000; i++) {
      text += i % 7 === 0 ? "\\n" : "é";
      const bytes = encoder.encode(text);
      const r = sp.parse(bytes, { partial: true, lossyUtf8: true });
      let n = 0;
      const ast = r.ast;
      // count the texts the mapper asks for through the AST (every read goes through start/end)
      const start = ast.start.bind(ast);
      (ast as { start: (id: number) => number }).start = (id) => {
        n++;
        return start(id);
      };
      const f = mapper.map(ast, bytes, true);
      reads.push(n);
      if (i === 2999) expect(f.message.tool_calls.at(-1)!.function.arguments.length).toBeGreaterThan(3000);
    }
    expect(Math.max(...reads.slice(-500))).toBeLessThanOrEqual(Math.max(...reads.slice(10, 100)) + 2);
  });
});
