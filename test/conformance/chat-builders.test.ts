/**
 * Our chat grammar builders vs the reference's `common_chat_peg_builder` helpers: the reference
 * builds a tree from a builder expression (test/support/README.md), we build ours with the
 * TypeScript helpers: the arenas must have the same structure (reachable nodes renumbered in
 * depth-first order, so creation order does not matter), and both must parse the same
 * outputs at every byte (partial) and whole to the same messages (arguments compared as JSON).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PegParser } from "../../lib/peg/builder.js";
import { buildChatPegParser, type ChatPegBuilder } from "../../lib/chat/grammar/builder.js";
import { standardJsonTools, type JsonToolsOptions } from "../../lib/chat/grammar/json-tools.js";
import { pythonStyleToolCalls } from "../../lib/chat/grammar/python-tools.js";
import { standardConstructedTools } from "../../lib/chat/grammar/tagged-tools.js";
import { parseChatOutput } from "../../lib/chat/parse.js";
import { chatPlan } from "../../lib/chat/plan.js";
import { LlamapegError } from "../../lib/errors.js";
import { TOOLS } from "../fixtures/chat/grammars.js";
import { getHarness, type Harness } from "../support/harness.js";
import { b64, cutsCharacter, normOurs, normRef, structuralArena, type RefMsg } from "./chat-compare.js";

const encoder = new TextEncoder();
let h: Harness;
const totals = { cases: 0, identicalArenas: 0, parses: 0 };

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  console.log(`chat builder conformance: ${totals.cases} grammars (${totals.identicalArenas} identical arenas), ${totals.parses} parses compared`);
});

interface BuilderCase {
  name: string;
  expr: unknown;
  ours: (p: ChatPegBuilder) => PegParser;
  inputs: string[];
}

function jsonTools(o: Omit<JsonToolsOptions, "tools">): Pick<BuilderCase, "expr" | "ours"> {
  const refOpts = {
    section_start: o.sectionStart,
    section_end: o.sectionEnd,
    tools: TOOLS,
    parallel_tool_calls: o.parallel,
    force_tool_calls: o.force,
    name_key: o.nameKey ?? "",
    args_key: o.argsKey ?? "",
    array_wrapped: o.arrayWrapped ?? false,
    function_is_key: o.functionIsKey ?? false,
    call_id_key: o.callIdKey ?? "",
    gen_call_id_key: o.genCallIdKey ?? "",
    parameters_order: o.parametersOrder ?? [],
    accept_openai_wrapper: o.acceptOpenaiWrapper ?? false,
  };
  const marker = o.sectionStart.slice(0, 6) || "{";
  return {
    expr: ["seq", ["content", ["until", marker]], ["standard_json_tools", refOpts], ["space"], ["end"]],
    ours: (p) => p.sequence([p.content(p.until(marker)), standardJsonTools(p, { ...o, tools: TOOLS }), p.space(), p.end()]),
  };
}

const W = `{"name": "get_current_weather", "arguments": {"location": "Paris \\"6e\\" 日本 😀", "unit": "celsius"}}`;
const F = `{"name": "get_forecast", "arguments": {"location": "Oslo", "unit": "celsius", "days": 3}}`;

const CASES: BuilderCase[] = [
  {
    name: "standard_json_tools: flat keys, parallel",
    ...jsonTools({ sectionStart: "<tool_call>", sectionEnd: "</tool_call>", parallel: true, force: false }),
    inputs: [`Hi <tool_call>${W}, ${F}</tool_call>`, `No call.`, `<tool_call>${W}`],
  },
  {
    name: "standard_json_tools: array-wrapped, forced, id and generated id, field order",
    ...jsonTools({
      sectionStart: "[TOOL_CALLS]",
      sectionEnd: "",
      parallel: true,
      force: true,
      arrayWrapped: true,
      callIdKey: "id",
      genCallIdKey: "tool_call_id",
      parametersOrder: ["id", "name", "arguments", "tool_call_id"],
    }),
    inputs: [
      `[TOOL_CALLS][{"id": "abc", "name": "get_forecast", "arguments": {"location": "x", "unit": "celsius"}, "tool_call_id": 3}]`,
      `[TOOL_CALLS] [{"id": 12, "name": "get_current_weather", "arguments": {"location": "y", "unit": "celsius"}, "tool_call_id": "q"}]`,
    ],
  },
  {
    name: "standard_json_tools: nested function.name keys with id",
    ...jsonTools({ sectionStart: "<tool_call>", sectionEnd: "</tool_call>", parallel: false, force: false, nameKey: "function.name", argsKey: "function.arguments", callIdKey: "id" }),
    inputs: [`<tool_call>{"id": "c9", "function": {"name": "get_forecast", "arguments": {"location": "a\\\\b", "unit": "celsius"}}}</tool_call>`],
  },
  {
    name: "standard_json_tools: function name as key, with and without an arguments key",
    ...jsonTools({ sectionStart: "<tool_call>", sectionEnd: "</tool_call>", parallel: true, force: false, functionIsKey: true, genCallIdKey: "call_id" }),
    inputs: [`<tool_call>{"get_forecast": {"location": "Rome", "unit": "celsius"}}, {"get_current_weather": {"location": "N", "unit": "celsius"}}</tool_call>`],
  },
  {
    name: "standard_json_tools: OpenAI wrapper accepted",
    ...jsonTools({ sectionStart: "<tool_call>", sectionEnd: "</tool_call>", parallel: false, force: true, acceptOpenaiWrapper: true }),
    inputs: [`<tool_call>{"type": "function", "name": "get_forecast", "arguments": {"location": "R", "unit": "celsius"}}</tool_call>`],
  },
  {
    name: "standard_constructed_tools: default markers, parallel",
    expr: ["seq", ["content", ["until", "<tool_call>"]], ["standard_constructed_tools", { markers: {}, tools: TOOLS, parallel_tool_calls: true, force_tool_calls: false }], ["space"], ["end"]],
    ours: (p) => p.sequence([p.content(p.until("<tool_call>")), standardConstructedTools(p, { tools: TOOLS, parallel: true, force: false }), p.space(), p.end()]),
    inputs: [
      `Ok <tool_call><function=get_forecast><param=location>Oslo "N"</param><param='days'>[1, {'a': None}]</param></function> <function=search_knowledge_base><param="query">x</param></function></tool_call>`,
    ],
  },
  {
    name: "standard_constructed_tools: custom markers, forced",
    expr: [
      "seq",
      [
        "standard_constructed_tools",
        {
          markers: {
            tool_call_start_marker: "[CALLS]",
            tool_call_end_marker: "[/CALLS]",
            function_opener: "[FN ",
            function_name_suffix: "]",
            function_closer: "[/FN]",
            parameter_key_prefix: "[ARG ",
            parameter_key_suffix: "]",
            parameter_closer: "[/ARG]",
          },
          tools: TOOLS,
          parallel_tool_calls: false,
          force_tool_calls: true,
        },
      ],
      ["end"],
    ],
    ours: (p) =>
      p.sequence([
        standardConstructedTools(p, {
          tools: TOOLS,
          parallel: false,
          force: true,
          markers: {
            toolCallStartMarker: "[CALLS]",
            toolCallEndMarker: "[/CALLS]",
            functionOpener: "[FN ",
            functionNameSuffix: "]",
            functionCloser: "[/FN]",
            parameterKeyPrefix: "[ARG ",
            parameterKeySuffix: "]",
            parameterCloser: "[/ARG]",
          },
        }),
        p.end(),
      ]),
    inputs: [`[CALLS][FN get_current_weather][ARG location]"Lima"[/ARG][ARG unit]celsius[/ARG][/FN][/CALLS]`],
  },
  {
    name: "python_style_tool_calls with JSON literals, parallel",
    expr: ["seq", ["content", ["until", "["]], ["python_style_tool_calls", { tools: TOOLS, parallel_tool_calls: true, allow_json_literals: true }], ["end"]],
    ours: (p) => p.sequence([p.content(p.until("[")), pythonStyleToolCalls(p, { tools: TOOLS, parallel: true, allowJsonLiterals: true }), p.end()]),
    inputs: [
      `Ok [get_forecast(location="Oslo \\"N\\"", unit='celsius', days=3), search_knowledge_base(query='it\\'s', max_results=None, category="api")]`,
      `[get_current_weather(location='x', unit="celsius")]`,
    ],
  },
  {
    name: "python_style_tool_calls without JSON literals, single",
    expr: ["seq", ["python_style_tool_calls", { tools: TOOLS, parallel_tool_calls: false, allow_json_literals: false }], ["end"]],
    ours: (p) => p.sequence([pythonStyleToolCalls(p, { tools: TOOLS, parallel: false, allowJsonLiterals: false }), p.end()]),
    inputs: [`[get_forecast(days=3, location='{a}')]`, `[get_forecast(days=true)]`],
  },
  {
    name: "permute, optspace, tag_with_safe_content",
    expr: [
      "seq",
      [
        "permute",
        "blk",
        [
          ["seq", ["optspace", "\n<think>\n"], ["reasoning", ["until", "</think>"]], "</think>"],
          ["seq", "<say>", ["content", ["until", "</say>"]], "</say>"],
          ["opt", ["tool", ["seq", ["tool_open", "<c "], ["tool_name", "get_forecast"], ">", ["tool_args", ["json"]], ["tool_close", "</c>"]]]],
        ],
      ],
      ["tag_with_safe_content", "tail", "<c ", ["tool", ["seq", ["tool_open", "<c "], ["tool_name", "get_forecast"], ">", ["tool_args", ["json"]], ["tool_close", "</c>"]]]],
      ["end"],
    ],
    ours: (p) => {
      const call = () => p.tool(p.sequence([p.toolOpen("<c "), p.toolName("get_forecast"), p.literal(">"), p.toolArgs(p.json()), p.toolClose("</c>")]));
      const blocks = p.permute("blk", [
        p.sequence([p.optspace("\n<think>\n"), p.reasoning(p.until("</think>")), p.literal("</think>")]),
        p.sequence([p.literal("<say>"), p.content(p.until("</say>")), p.literal("</say>")]),
        p.optional(call()),
      ]);
      return p.sequence([blocks, p.tagWithSafeContent("tail", "<c ", call()), p.end()]);
    },
    inputs: [
      `<say>s</say><think>r</think> tail <c get_forecast>{"location": "x"}</c> <b>`,
      `<c get_forecast>{"a": 1}</c>\n<think>\nr</think><say></say>`,
    ],
  },
];

describe("chat builder conformance", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      totals.cases++;
      const built = await h.call<{ arena: any }>("chat.peg_build", { expr: c.expr });
      const arena = buildChatPegParser(c.ours);
      // The same combinators as the compiled C++ helpers: the same arena, compared structurally.
      expect(structuralArena(arena.toJSON())).toEqual(structuralArena(built.arena));
      totals.identicalArenas++;
      const plan = chatPlan(arena, { referenceMode: true });
      for (const text of c.inputs) {
        const bytes = encoder.encode(text);
        for (let cut = 0; cut <= bytes.length; cut++) {
          if (cutsCharacter(bytes, cut)) continue; // cut characters: see chat-parse.test.ts
          totals.parses++;
          const ref = await h.request<{ msg: RefMsg }>("chat.parse", { expr: c.expr, text_b64: b64(bytes.subarray(0, cut)), partial: true });
          let ours: ReturnType<typeof parseChatOutput> | LlamapegError;
          try {
            ours = parseChatOutput(plan, bytes.subarray(0, cut), { partial: true });
          } catch (e) {
            ours = e as LlamapegError;
          }
          const where = `${JSON.stringify(text)} cut at ${cut}`;
          expect(ours instanceof LlamapegError, `${where}: reference ${ref.ok ? "accepts" : `rejects (${ref.error})`}`).toBe(!ref.ok);
          if (ref.ok && !(ours instanceof LlamapegError)) expect(normOurs(ours), where).toEqual(normRef(ref.result!.msg));
        }
      }
    });
  }
});
