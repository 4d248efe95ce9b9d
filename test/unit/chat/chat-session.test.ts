import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyDeltas, diffMessages } from "../../../lib/chat/diff.js";
import { emptyAssistantMessage, type AssistantMessage, type ChatDelta } from "../../../lib/chat/messages.js";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { chatPlan, type ChatPlan } from "../../../lib/chat/plan.js";
import { ChatSession, type ChatEvent } from "../../../lib/chat/session.js";
import { buildChatPegParser } from "../../../lib/chat/grammar/builder.js";
import { GRAMMARS } from "../../fixtures/chat/grammars.js";

const encoder = new TextEncoder();
const plans = new Map<string, ChatPlan>(GRAMMARS.map((g) => [g.name, chatPlan(g.build(), { generationPrompt: g.generationPrompt, format: g.format ?? "peg-native" })]));

interface Streamed {
  deltas: ChatDelta[];
  events: ChatEvent[];
  final: AssistantMessage;
}

/** Feeds `bytes` cut at `cuts` (sorted, deduplicated inside), then finishes. */
function stream(plan: ChatPlan, bytes: Uint8Array, cuts: number[]): Streamed {
  let n = 0;
  const session = new ChatSession(plan, { generateToolCallId: (i) => `gen-${i}-${n++}` });
  const deltas: ChatDelta[] = [];
  const events: ChatEvent[] = [];
  let prev = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    if (cut <= prev || cut >= bytes.length) continue;
    const f = session.feed(bytes.subarray(prev, cut), prev);
    deltas.push(...f.deltas);
    events.push(...f.events);
    prev = cut;
  }
  if (prev < bytes.length) {
    const f = session.feed(bytes.subarray(prev), prev);
    deltas.push(...f.deltas);
    events.push(...f.events);
  }
  const end = session.finish();
  deltas.push(...end.deltas);
  events.push(...end.events);
  return { deltas, events, final: end.message };
}

/** The streaming contract: replay equals the final message, headers first and once, ids fixed. */
function checkStream({ deltas, final }: Streamed): void {
  expect(applyDeltas(emptyAssistantMessage(), deltas)).toEqual(final);
  const headerAt = new Map<number, string>();
  for (const d of deltas) {
    expect(Object.keys(d)).toHaveLength(1);
    for (const tc of d.tool_calls ?? []) {
      if (tc.function?.name !== undefined) {
        expect(headerAt.has(tc.index), `second header for call ${tc.index}`).toBe(false);
        expect(tc.id).toBeTruthy();
        expect(tc.function.arguments).toBe("");
        headerAt.set(tc.index, tc.id!);
      } else {
        expect(headerAt.has(tc.index), `arguments before header for call ${tc.index}`).toBe(true);
        expect(tc.id).toBeUndefined();
      }
    }
  }
  final.tool_calls.forEach((c, i) => expect(c.id).toBe(headerAt.get(i)));
}

function withoutIds(m: AssistantMessage): AssistantMessage {
  return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: "" })) };
}

describe("ChatSession over hand-built grammars", () => {
  for (const g of GRAMMARS) {
    const plan = plans.get(g.name)!;
    describe(g.name, () => {
      it("streams each valid output byte by byte to the one-shot parse", () => {
        for (const text of g.valid) {
          const bytes = encoder.encode(text);
          const s = stream(plan, bytes, [...bytes.keys()]);
          checkStream(s);
          expect(s.events).toEqual([]);
          const oneShot = parseChatOutput(plan, text);
          expect(withoutIds(s.final)).toEqual(withoutIds(oneShot));
          // A call's id is the model's if it was there when the call first showed, else generated.
          const firstIds: string[] = [];
          for (let cut = 1; cut <= bytes.length; cut++) {
            const m = parseChatOutput(plan, bytes.subarray(0, cut), { partial: cut < bytes.length });
            m.tool_calls.forEach((c, i) => i >= firstIds.length && firstIds.push(c.id));
          }
          firstIds.forEach((id, i) => expect(s.final.tool_calls[i]!.id).toMatch(id === "" ? /^gen-/ : new RegExp(`^${id}$`)));
        }
      });

      it(g.flickers ? `partial parses flicker (${g.flickers})` : "every partial parse of a valid output extends the previous one", () => {
        let flickered = false;
        for (const text of g.valid) {
          const bytes = encoder.encode(text);
          let prev = emptyAssistantMessage();
          for (let cut = 1; cut <= bytes.length; cut++) {
            const msg = parseChatOutput(plan, bytes.subarray(0, cut), { partial: cut < bytes.length });
            try {
              diffMessages(prev, msg);
            } catch (e) {
              if (!g.flickers) throw e;
              flickered = true;
            }
            prev = msg;
          }
          for (const c of prev.tool_calls) expect(() => JSON.parse(c.function.arguments)).not.toThrow();
        }
        expect(flickered).toBe(g.flickers !== undefined);
      });

      it("keeps the contract for mutated outputs (cuts, repeats, inserted fragments of the syntax), any chunking", () => {
        const texts = [...g.valid, ...g.broken];
        const mutation = fc.tuple(fc.constantFrom("delete", "repeat", "insert"), fc.nat(), fc.nat(40), fc.nat(), fc.nat());
        fc.assert(
          fc.property(fc.nat(texts.length - 1), fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(400), { maxLength: 20 }), (which, muts, cuts) => {
            let text = texts[which]!;
            for (const [kind, at, len, from, other] of muts) {
              const i = at % (text.length + 1);
              const j = Math.min(text.length, i + len);
              if (kind === "delete") text = text.slice(0, i) + text.slice(j);
              else if (kind === "repeat") text = text.slice(0, j) + text.slice(i, j) + text.slice(j);
              else {
                // A fragment of another output of the same format: its markers, quotes, braces...
                const src = texts[other % texts.length]!;
                const k = from % (src.length + 1);
                text = text.slice(0, i) + src.slice(k, k + len) + text.slice(i);
              }
            }
            checkStream(stream(plan, encoder.encode(text), cuts));
          }),
          { numRuns: 60 },
        );
      });

      it("streams the same frames through the arena's incremental parser as through plain re-parses", () => {
        const arena = plan.parser!;
        expect(typeof arena.streamParser).toBe("function");
        // Same arena, but without streamParser: every frame is a fresh parse.
        const plain: ChatPlan = { ...plan, parser: { parse: (input, options) => arena.parse(input, options) } };
        const texts = [...g.valid, ...g.broken];
        fc.assert(
          fc.property(fc.nat(texts.length - 1), fc.array(fc.nat(400), { maxLength: 25 }), (which, cuts) => {
            const bytes = encoder.encode(texts[which]!);
            expect(stream(plan, bytes, cuts)).toEqual(stream(plain, bytes, cuts));
          }),
          { numRuns: 25 },
        );
      });

      it("keeps the contract for any chunking of valid and broken outputs", () => {
        const texts = [...g.valid, ...g.broken];
        fc.assert(
          fc.property(fc.integer({ min: 0, max: texts.length - 1 }), fc.array(fc.nat(400), { maxLength: 30 }), (which, cuts) => {
            const s = stream(plan, encoder.encode(texts[which]!), cuts);
            checkStream(s);
          }),
          { numRuns: 40 },
        );
      });
    });
  }
});

describe("ChatSession with stray invalid UTF-8 in the output", () => {
  const plan = plans.get(GRAMMARS[0]!.name)!;
  const cat = (...parts: (string | readonly number[])[]): Uint8Array => Uint8Array.from(parts.flatMap((x) => (typeof x === "string" ? [...encoder.encode(x)] : x)));

  it("a stray byte before a tool call is U+FFFD in the content, and the call stays a call", () => {
    for (const stray of [[0xff], [0x80], [0xe2, 0x41], [0xc3]]) {
      const bytes = cat("ok</think>Let me look.", stray, ` <tool_call>[{"name": "get_forecast", "arguments": {"location": "a`, [0xfe], `b", "unit": "celsius", "days": 2}}]</tool_call>`);
      for (const cuts of [[...bytes.keys()], [5, 30, 31, 60], []]) {
        const s = stream(plan, bytes, cuts);
        checkStream(s);
        expect(s.events).toEqual([]);
        expect(s.final.content).toBe(`Let me look.\ufffd${stray.length === 2 && stray[1] === 0x41 ? "A" : ""} `);
        expect(s.final.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([["get_forecast", { location: "a\ufffdb", unit: "celsius", days: 2 }]]);
      }
      expect(parseChatOutput(plan, bytes).tool_calls).toHaveLength(1);
    }
  });

  it("random stray bytes anywhere: same frames incrementally and through fresh parses, contract kept", () => {
    const arena = plan.parser!;
    const plain: ChatPlan = { ...plan, parser: { parse: (input, options) => arena.parse(input, options) } };
    const valid = encoder.encode(GRAMMARS[0]!.valid[0]!);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.constantFrom([0xff], [0x80], [0xe2, 0x82], [0xf0, 0x41], [0xc3])), { minLength: 1, maxLength: 3 }), fc.array(fc.nat(400), { maxLength: 25 }), (strays, cuts) => {
        let bytes: Uint8Array = valid;
        for (const [at, b] of strays) {
          const i = at % (bytes.length + 1);
          bytes = cat([...bytes.subarray(0, i)], b, [...bytes.subarray(i)]);
        }
        const s = stream(plan, bytes, cuts);
        checkStream(s);
        expect(s).toEqual(stream(plain, bytes, cuts));
      }),
      { numRuns: 60 },
    );
  });
});

describe("ChatSession failure handling", () => {
  const plan = plans.get(GRAMMARS[0]!.name)!;

  it("reports a parse_error with the byte position and streams the rest as content", () => {
    const text = `ok</think>Hi<tool_call>[{"name": "nope"}]</tool_call> tail`;
    const s = stream(plan, encoder.encode(text), [...encoder.encode(text).keys()]);
    checkStream(s);
    expect(s.events.length).toBeGreaterThanOrEqual(1);
    const e = s.events[0]!;
    expect(e).toMatchObject({ type: "parse_error", code: "ERR_CHAT_PARSE" });
    expect(e.position).toBeGreaterThan(0);
    expect(e.position).toBeLessThanOrEqual(encoder.encode(text).length);
    // stream() gives each piece the byte offset it starts at as its token id: a byte-by-byte feed
    // makes the token the position itself.
    expect(e.token).toBe(e.position);
    // No text is lost: reasoning and content so far, then everything unparsed as content.
    expect(s.final.reasoning_content).toBe("ok");
    expect(s.final.content).toBe(`Hi<tool_call>[{"name": "nope"}]</tool_call> tail`);
  });

  it("never throws out of feed for random bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), fc.array(fc.nat(120), { maxLength: 10 }), (bytes, cuts) => {
        checkStream(stream(plan, bytes, cuts));
      }),
      { numRuns: 60 },
    );
  });

  it("never throws for random mixes of the syntax's own markers, quotes, braces, CJK and emoji", () => {
    const piece = fc.constantFrom("<think>", "</think>", "<tool_call>[", "]</tool_call>", '{"name": "get_forecast", ', '"arguments": {', '"location": "', "\\", '"', "}", ", ", "日本", "😀", "\n", "a");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 25 }), fc.array(fc.nat(300), { maxLength: 15 }), (pieces, cuts) => {
        checkStream(stream(plan, encoder.encode(pieces.join("")), cuts));
      }),
      { numRuns: 150 },
    );
  });

  it("records the token map and rejects use after finish", () => {
    const session = new ChatSession(chatPlan(null));
    session.feed("ab", 5);
    session.feed(new Uint8Array([0xe6, 0x97]), 6); // first two bytes of 日
    expect(session.current.content).toBe("ab");
    session.feed(new Uint8Array([0xa5]), 7);
    expect(session.current.content).toBe("ab日");
    expect(session.input.tokens()).toEqual([5, null, 6, null, 7]);
    session.finish();
    expect(() => session.feed("x")).toThrow(/after finish/);
  });

  it("a content-only plan streams content (the generation prompt is not part of it)", () => {
    const s = stream(chatPlan(null, { generationPrompt: "<|assistant|>" }), encoder.encode("héllo 😀"), [1, 2, 3, 9]);
    checkStream(s);
    expect(s.final.content).toBe("héllo 😀");
  });

  it("ids: the model's id is kept, a missing one is generated once per index", () => {
    const arena = buildChatPegParser((p) =>
      p.seq(
        p.zeroOrMore(
          p.tool(p.seq(p.toolOpen("<c"), p.optional(p.seq(" id=", p.toolId(p.until(">")))), ">", p.toolName(p.alt("f", "g")), p.toolArgs(p.json()), p.toolClose("</c>"))),
        ),
        p.end(),
      ),
    );
    const s = stream(chatPlan(arena), encoder.encode('<c id=m1>f{"a": 1}</c><c>g{"b": [2]}</c>'), [3, 9, 12, 20, 25, 30]);
    checkStream(s);
    expect(s.final.tool_calls.map((c) => c.id)).toEqual(["m1", expect.stringMatching(/^gen-1-/)]);
  });
});
