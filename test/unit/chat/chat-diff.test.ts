import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { applyDeltas, diffMessages } from "../../../lib/chat/diff.js";
import { emptyAssistantMessage, makeToolCall, type AssistantMessage } from "../../../lib/chat/messages.js";

function msg(content: string, reasoning = "", calls: [string, string, string?][] = []): AssistantMessage {
  return { role: "assistant", content, reasoning_content: reasoning, tool_calls: calls.map(([n, a, id]) => makeToolCall(n, a, id ?? "")) };
}

describe("diffMessages", () => {
  it("emits the growth of each text field", () => {
    expect(diffMessages(msg("Hel", "th"), msg("Hello", "think"))).toEqual([{ reasoning_content: "ink" }, { content: "lo" }]);
    expect(diffMessages(msg("Hello"), msg("Hello"))).toEqual([]);
  });

  it("emits nothing when a field shrinks to a prefix", () => {
    expect(diffMessages(msg("Hello</"), msg("Hello"))).toEqual([]);
  });

  it("grows only the last previous call and announces new calls whole", () => {
    const prev = msg("", "", [["f", '{"a":1}'], ["g", '{"b":']]);
    const next = msg("", "", [["f", '{"a":1}'], ["g", '{"b":2}'], ["h", "{", "id9"]]);
    expect(diffMessages(prev, next)).toEqual([
      { tool_calls: [{ index: 1, function: { arguments: "2}" } }] },
      { tool_calls: [{ index: 2, id: "id9", type: "function", function: { name: "h", arguments: "{" } }] },
    ]);
  });

  it("sends id and name again when they change on the last call", () => {
    expect(diffMessages(msg("", "", [["get_", "{"]]), msg("", "", [["get_weather", '{"x"', "c1"]]))).toEqual([
      { tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "get_weather", arguments: '"x"' } }] },
    ]);
  });

  it.each([
    ["content rewritten", msg("abc"), msg("abd"), "content"],
    ["reasoning rewritten", msg("", "xy"), msg("", "z"), "reasoning_content"],
    ["fewer tool calls", msg("", "", [["f", "{}"]]), msg(""), "tool_calls"],
    ["renamed call", msg("", "", [["f", "{}"]]), msg("", "", [["g", "{}"]]), "tool_calls[0].function.name"],
    ["arguments rewritten", msg("", "", [["f", '{"a"']]), msg("", "", [["f", '{"b"']]), "tool_calls[0].function.arguments"],
  ])("rejects %s with ERR_CHAT_DIFF", (_name, prev, next, where) => {
    try {
      diffMessages(prev, next);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(LlamapegError);
      expect((e as LlamapegError).code).toBe("ERR_CHAT_DIFF");
      expect((e as LlamapegError).where).toBe(where);
    }
  });

  it("deltas replayed over growing snapshots rebuild the last snapshot", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 20 });
    const target = fc.record({ content: text, reasoning: text, calls: fc.array(fc.tuple(fc.constantFrom("f", "g"), text), { maxLength: 3 }) });
    // Snapshot k: the first k units of a linearization (reasoning chars, content chars, then each
    // call's name whole followed by its argument chars), so snapshots only ever grow.
    const snapshot = (t: { content: string; reasoning: string; calls: [string, string][] }, k: number): AssistantMessage => {
      const m = emptyAssistantMessage();
      const take = (s: string) => {
        const n = Math.min(k, s.length);
        k -= n;
        return s.slice(0, n);
      };
      m.reasoning_content = take(t.reasoning);
      m.content = take(t.content);
      for (const [name, args] of t.calls) {
        if (k <= 0) break;
        k--;
        m.tool_calls.push(makeToolCall(name, take(args)));
      }
      return m;
    };
    fc.assert(
      fc.property(target, fc.array(fc.nat(80), { maxLength: 10 }), (t, cuts) => {
        let prev = emptyAssistantMessage();
        const client = emptyAssistantMessage();
        for (const k of [...cuts.sort((a, b) => a - b), Infinity]) {
          const next = snapshot(t, k);
          applyDeltas(client, diffMessages(prev, next));
          prev = next;
        }
        expect(client).toEqual(snapshot(t, Infinity));
      }),
    );
  });
});
