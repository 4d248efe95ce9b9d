import { describe, expect, it } from "vitest";
import { buildChatPegParser } from "../../../lib/chat/grammar/builder.js";
import { buildChatOutputParser, type ChatOutputSyntax } from "../../../lib/chat/grammar/output-parser.js";
import { buildChatGrammar } from "../../../lib/chat/grammar/plan-grammar.js";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { chatPlan } from "../../../lib/chat/plan.js";
import { TOOLS } from "../../fixtures/chat/grammars.js";
import { canonicalGbnf, structuralArena } from "../../conformance/chat-compare.js";

const matches = (arena: ReturnType<typeof buildChatPegParser>, text: string) => arena.parse(text).type === "success";

describe("ChatPegBuilder combinators", () => {
  it("permute accepts every order of its blocks, each once", () => {
    const arena = buildChatPegParser((p) => p.seq(p.permute("blk", ["a", "b", "c"]), p.end()));
    for (const order of ["abc", "acb", "bac", "bca", "cab", "cba"]) expect(matches(arena, order), order).toBe(true);
    for (const bad of ["ab", "aab", "abcc", ""]) expect(matches(arena, bad), bad).toBe(false);
    expect(arena.hasRule("blk-7")).toBe(true);
  });

  it("permute beyond six blocks keeps the given order", () => {
    const arena = buildChatPegParser((p) => p.seq(p.permute("blk", ["1", "2", "3", "4", "5", "6", "7"]), p.end()));
    expect(matches(arena, "1234567")).toBe(true);
    expect(matches(arena, "2134567")).toBe(false);
    expect(arena.hasRule("blk-127")).toBe(false);
  });

  it("optspace makes the marker's surrounding whitespace optional, character by character", () => {
    const arena = buildChatPegParser((p) => p.seq(p.optspace("\n<t>\n"), "x", p.end()));
    for (const ok of ["<t>x", "\n<t>x", "<t>\nx", "\n<t>\nx"]) expect(matches(arena, ok), JSON.stringify(ok)).toBe(true);
    expect(matches(arena, "\n\n<t>x")).toBe(false);
  });

  it("tagWithSafeContent keeps marker-like text that is not a structure as content", () => {
    const arena = buildChatPegParser((p) => {
      const call = p.tool(p.seq(p.toolOpen("<c>"), p.toolName("f"), p.toolArgs(p.json()), p.toolClose("</c>")));
      return p.seq(p.tagWithSafeContent("text", "<c>", call), p.end());
    });
    const m = parseChatOutput(chatPlan(arena), 'a <b>"{x}"</b> <c>f{"x": 1}</c> b');
    expect(m.content).toBe('a <b>"{x}"</b>  b');
    expect(m.tool_calls.map((c) => [c.function.name, c.function.arguments])).toEqual([["f", '{"x": 1}']]);
  });
});

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
const CALL = (loc: string) => `<tool_call>{"name": "get_current_weather", "arguments": {"location": "${loc}", "unit": "celsius"}}</tool_call>`;

describe("buildChatOutputParser", () => {
  const plan = (req: Parameters<typeof buildChatOutputParser>[1]) => chatPlan(buildChatOutputParser(QWEN_LIKE, req), { generationPrompt: req.generationPrompt ?? "", toolCallsRequired: req.toolChoice === "required" });

  it("tool_choice auto: content, reasoning and calls", () => {
    const m = parseChatOutput(plan({ tools: TOOLS, generationPrompt: "<|im_start|>assistant\n" }), `<think>hm</think>\nOk.${CALL("a")}\n${CALL("b")}`);
    // The end marker has no trailing newline here, so the newline after it is content.
    expect([m.reasoning_content, m.content, m.tool_calls.length]).toEqual(["hm", "\nOk.", 2]);
  });

  it("parallel off: a second call in the section does not parse", () => {
    const section: ChatOutputSyntax = { ...QWEN_LIKE, tools: { ...QWEN_LIKE.tools, format: { mode: "json_native", sectionStart: "<tools>", sectionEnd: "</tools>", perCallStart: "", perCallEnd: "" } } };
    const call = (l: string) => `{"name": "get_current_weather", "arguments": {"location": "${l}", "unit": "celsius"}}`;
    const on = chatPlan(buildChatOutputParser(section, { tools: TOOLS }));
    const off = chatPlan(buildChatOutputParser(section, { tools: TOOLS, parallelToolCalls: false }));
    expect(parseChatOutput(on, `<tools>${call("a")}, ${call("b")}</tools>`).tool_calls).toHaveLength(2);
    expect(parseChatOutput(off, `<tools>${call("a")}</tools>`).tool_calls).toHaveLength(1);
    expect(() => parseChatOutput(off, `<tools>${call("a")}, ${call("b")}</tools>`)).toThrow(/does not match/);
  });

  it("tool_choice none: tool-call text is content", () => {
    const m = parseChatOutput(plan({ tools: TOOLS, toolChoice: "none" }), `Ok.${CALL("a")}`);
    expect(m.tool_calls).toEqual([]);
    expect(m.content).toBe(`Ok.${CALL("a")}`);
  });

  it("tool_choice required: plain text does not parse, a call does", () => {
    const p = plan({ tools: TOOLS, toolChoice: "required" });
    expect(() => parseChatOutput(p, "Just text.")).toThrow(/does not match/);
    expect(parseChatOutput(p, CALL("x")).tool_calls).toHaveLength(1);
  });

  it("reasoning not extracted: the block stays in the content", () => {
    const m = parseChatOutput(plan({ tools: [], extractReasoning: false }), "<think>a</think>b");
    expect([m.reasoning_content, m.content]).toEqual(["", "<think>a</think>b"]);
  });

  it("a JSON-schema response format makes the answer JSON content, fenced or not", () => {
    const p = plan({ jsonSchema: { type: "object", properties: { a: { type: "number" } } } });
    expect(parseChatOutput(p, '<think>r</think> {"a": 1}').content).toBe('{"a": 1}');
    expect(parseChatOutput(p, '```json\n{"a": 2}\n```').content).toBe('{"a": 2}');
    expect(() => parseChatOutput(p, "not json")).toThrow(/does not match/);
  });
});

describe("buildChatGrammar", () => {
  const grammarFor = (req: Parameters<typeof buildChatOutputParser>[1]) => buildChatGrammar(buildChatOutputParser(QWEN_LIKE, req), QWEN_LIKE, req);

  it("tool_choice auto: a lazy grammar triggered by the call marker", () => {
    const g = grammarFor({ tools: TOOLS });
    expect([g?.lazy, g?.triggers]).toEqual([true, [{ type: "word", value: "<tool_call>" }]]);
    expect(g?.gbnf).toMatch(/^root ::= /m);
    expect(g?.gbnf).toContain("get_current_weather");
  });

  it("tool_choice required: applied from the start; none: no grammar", () => {
    const required = grammarFor({ tools: TOOLS, toolChoice: "required" });
    expect([required?.lazy, required?.triggers, required?.gbnf !== ""]).toEqual([false, [], true]);
    expect(grammarFor({ tools: TOOLS, toolChoice: "none" })).toBeNull();
    expect(grammarFor({ tools: [] })).toBeNull();
  });

  it("a response format constrains from the start", () => {
    const g = grammarFor({ jsonSchema: { type: "object", properties: { a: { type: "integer" } }, required: ["a"] } });
    expect(g?.lazy).toBe(false);
    expect(g?.gbnf).toContain('response-format-schema-a-kv ::= "\\"a\\"" space ":" space integer');
  });
});

describe("structural comparison (conformance helpers)", () => {
  const build = (swap: boolean, word = "b") =>
    buildChatPegParser((p) => {
      // the same tree, its nodes created in two orders (and one dead node)
      const [a, b] = swap ? [p.literal(word), p.literal("a")].reverse() : [p.literal("a"), p.literal(word)];
      if (swap) p.eps();
      return p.seq(p.content(p.until("<x>")), a!, p.rule("r", p.choice([b!, p.until("<y>")])), p.end());
    });

  it("arenas built in a different order compare equal; a different tree does not", () => {
    const x = build(false).toJSON();
    const y = build(true).toJSON();
    expect(JSON.stringify(x)).not.toBe(JSON.stringify(y));
    expect(structuralArena(y)).toEqual(structuralArena(x));
    expect(structuralArena(build(true, "c").toJSON())).not.toEqual(structuralArena(x));
  });

  it("GBNF rule names made from node ids are renamed by first use", () => {
    const x = build(false).toGbnf();
    const y = build(true).toGbnf();
    expect(x).not.toBe(y);
    expect(canonicalGbnf(y)).toBe(canonicalGbnf(x));
    expect(canonicalGbnf(x)).toMatch(/^until-c0 ::= /m);
    expect(canonicalGbnf(build(true, "c").toGbnf())).not.toBe(canonicalGbnf(x));
  });
});
