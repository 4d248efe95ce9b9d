import { describe, expect, it } from "vitest";
import { buildChatOutputParser, type ChatOutputSyntax } from "../../../lib/chat/grammar/output-parser.js";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { chatPlan } from "../../../lib/chat/plan.js";
import { ChatSession } from "../../../lib/chat/session.js";
import { TOOLS } from "../../fixtures/chat/grammars.js";

// The finished output of a model is parsed as llama.cpp parses it (leniently): an output that ends
// where the syntax could go on is an answer as far as it got.
const QWEN_LIKE: ChatOutputSyntax = {
  reasoning: { mode: "tag_based", start: "<think>", end: "</think>" },
  content: { mode: "plain", start: "", end: "" },
  tools: {
    format: { mode: "json_native", sectionStart: "", sectionEnd: "", perCallStart: "<tool_call>", perCallEnd: "</tool_call>" },
    function: { namePrefix: "", nameSuffix: "", close: "" },
    arguments: { start: "", end: "", namePrefix: "", nameSuffix: "", valuePrefix: "", valueSuffix: "" },
    callId: { pos: "none", prefix: "", suffix: "" },
  },
};
type Req = Parameters<typeof buildChatOutputParser>[1];
const plan = (req: Req) =>
  chatPlan(buildChatOutputParser(QWEN_LIKE, req), { generationPrompt: req.generationPrompt ?? "", toolCallsRequired: req.toolChoice === "required" });

function stream(p: ReturnType<typeof plan>, text: string) {
  const s = new ChatSession(p, { generateToolCallId: (i) => `call_${i}` });
  const events = [];
  for (const ch of text) events.push(...s.feed(ch).events);
  const last = s.finish();
  return { message: last.message, events: [...events, ...last.events] };
}

describe("finished outputs", () => {
  it("tool_choice auto: a plain answer is content, with no parse error", () => {
    const p = plan({ tools: TOOLS });
    expect(parseChatOutput(p, "No tool needed, it is sunny.").content).toBe("No tool needed, it is sunny.");
    const { message, events } = stream(p, "No tool needed, it is sunny.");
    expect(events).toEqual([]);
    expect(message.content).toBe("No tool needed, it is sunny.");
  });

  it("reference mode: a tool call cut short (max_tokens) is that call with its arguments so far, as the reference reads it", () => {
    const p = { ...plan({ tools: TOOLS }), referenceMode: true };
    const cut = 'Let me check. <tool_call>{"name": "get_current_weather", "arguments": {"loca';
    const whole = parseChatOutput(p, cut);
    expect(whole.content).toBe("Let me check. ");
    expect(whole.tool_calls.map((c) => c.function)).toEqual([{ name: "get_current_weather", arguments: '{"loca' }]);
    const { message, events } = stream(p, cut);
    expect(events).toEqual([]);
    expect(message.tool_calls.map((c) => c.function)).toEqual(whole.tool_calls.map((c) => c.function));
  });

  it("a cut call is closed where it stands and reported, or (where appending cannot close it) a parse error", () => {
    const p = plan({ tools: TOOLS });
    const closable = 'Let me check. <tool_call>{"name": "get_current_weather", "arguments": {"location": "Par';
    expect(parseChatOutput(p, closable).tool_calls.map((c) => c.function)).toEqual([{ name: "get_current_weather", arguments: '{"location": "Par"}' }]);
    const a = stream(p, closable);
    expect(a.message.tool_calls[0]!.function.arguments).toBe('{"location": "Par"}');
    expect(a.events.map((e) => [e.code, /cut inside its arguments.*partial call/.test(e.message)])).toEqual([["ERR_CHAT_PARSE", true]]);

    const dangling = 'Let me check. <tool_call>{"name": "get_current_weather", "arguments": {"loca';
    expect(() => parseChatOutput(p, dangling)).toThrow(/tool call 0 \(get_current_weather\) has arguments that are not JSON/);
    const b = stream(p, dangling);
    expect(b.message.tool_calls[0]!.function.arguments).toBe('{"loca');
    expect(b.events.map((e) => e.code)).toEqual(["ERR_CHAT_PARSE"]);
    expect(b.events[0]!.message).toMatch(/not JSON: "\{\\"loca"/);
  });

  it("tool_choice required: a plain answer is a parse error", () => {
    const p = plan({ tools: TOOLS, toolChoice: "required" });
    expect(() => parseChatOutput(p, "Just text.")).toThrow(/does not match/);
  });

  it("a reasoning block the model never closed stays reasoning, as it was streamed", () => {
    const p = plan({ tools: TOOLS, generationPrompt: "<think>\n" });
    const { message, events } = stream(p, "still thinking about it");
    expect(events).toEqual([]);
    expect([message.reasoning_content.trim(), message.content]).toEqual(["still thinking about it", ""]);
  });
});
