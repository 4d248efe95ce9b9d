import { describe, expect, it } from "vitest";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { chatPlan } from "../../../lib/chat/plan.js";
import { GRAMMARS } from "../../fixtures/chat/grammars.js";

const byFormat = (f: string) => {
  const g = GRAMMARS.find((x) => x.format === f)!;
  return { g, plan: chatPlan(g.build(), { format: f }) };
};

describe("format-specific mappers", () => {
  it("gemma4: bare keys, <|\"|> strings, nested values become JSON; open containers stay open", () => {
    const { g, plan } = byFormat("peg-gemma4");
    const m = parseChatOutput(plan, g.valid[0]!);
    expect(m.content).toBe("Let me check.");
    expect(m.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ["get_forecast", { location: 'Oslo "N" {x} 日本', unit: "celsius", days: 3, extra: [1, true, null, { a: "b" }] }],
      ["get_current_weather", {}],
    ]);
    const cut = parseChatOutput(plan, `<|tool_call>call:get_forecast{location:<|"|>Os`, { partial: true });
    expect(cut.tool_calls[0]!.function.arguments).toBe('{"location":"Os');
  });

  it("minimax-m3: nested objects and arrays of tagged values become JSON", () => {
    const { g, plan } = byFormat("peg-minimax-m3");
    const m = parseChatOutput(plan, g.valid[0]!);
    expect(JSON.parse(m.tool_calls[0]!.function.arguments)).toEqual({ query: 'a "b" 日本', filters: { tags: ["x", "y{"], limit: 3 } });
    const cut = parseChatOutput(plan, `<invoke name=search_knowledge_base><filters><tags><item>x</item><item>y`, { partial: true });
    expect(cut.tool_calls[0]!.function.arguments).toBe('{"filters":{"tags":["x","y');
  });

  it("a plan with another format uses the generic mapper", () => {
    const { g } = byFormat("peg-gemma4");
    const m = parseChatOutput(chatPlan(g.build(), { format: "peg-native", referenceMode: true }), g.valid[0]!);
    // The generic mapper takes `tool-args` text only when it is a JSON object: here it is not JSON.
    expect(m.tool_calls[0]!.function.arguments).toBe(`{location:<|"|>Oslo "N" {x} 日本<|"|>,unit:<|"|>celsius<|"|>,days:3,extra:[1, true, null, {a:<|"|>b<|"|>}]}`);
    // outside reference mode, a call whose arguments are not JSON is an error naming the call, never handed out
    expect(() => parseChatOutput(chatPlan(g.build(), { format: "peg-native" }), g.valid[0]!)).toThrow(/tool call 0 \(get_forecast\) has arguments that are not JSON/);
  });
});
