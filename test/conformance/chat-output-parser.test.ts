/**
 * `buildChatOutputParser` vs the reference's autoparser: for every template in
 * vendor/llama.cpp/models/templates that has no specialized handler (the autoparser path),
 * the reference's analysis (`chat.analyze`) is fed to our generator with the same request; the tree
 * must be the reference's own tree (from `chat.templates_apply`) node for node (except DEVIATIONS,
 * our deliberate differences), and parse the same outputs to the same messages. Outputs: the generation prompt's continuation with reasoning, content
 * and a tool call rendered in the template's own markers, cut at every byte.
 */
import { readFileSync, readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildChatOutputParser, type ChatOutputSyntax } from "../../lib/chat/grammar/output-parser.js";
import { buildChatGrammar } from "../../lib/chat/grammar/plan-grammar.js";
import { parseChatOutput } from "../../lib/chat/parse.js";
import { chatPlan } from "../../lib/chat/plan.js";
import { detectSpecializedTemplate } from "../../lib/chat/families/registry.js";
import { LlamapegError } from "../../lib/errors.js";
import { TOOLS } from "../fixtures/chat/grammars.js";
import { getHarness, type Harness } from "../support/harness.js";
import { b64, canonicalGbnf, cutsCharacter, normOurs, normRef, structuralArena, type RefMsg } from "./chat-compare.js";

const DIR = new URL("../../vendor/llama.cpp/models/templates/", import.meta.url).pathname;
const TEMPLATES = readdirSync(DIR).filter((f) => f.endsWith(".jinja")).sort();
const encoder = new TextEncoder();
let h: Harness;
const totals = { templates: 0, specialized: 0, autoparser: 0, identicalArenas: 0, grammars: 0, parses: 0 };

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
  console.log(
    `chat output parser conformance: ${totals.templates} templates (${totals.specialized} specialized, not the autoparser's), ${totals.autoparser} template x request variants on the autoparser path (${totals.identicalArenas} identical trees, ${totals.grammars} identical grammars), ${totals.parses} parses compared`,
  );
});

/** The harness's snake_case analysis in the camelCase shape our generator reads. */
function toSyntax(a: any): ChatOutputSyntax {
  const t = a.tools;
  // The harness prints the C++ enum names (TAG_BASED); the analysis types use snake_case.
  const low = (s: string) => s.toLowerCase();
  return {
    reasoning: { ...a.reasoning, mode: low(a.reasoning.mode) },
    content: { ...a.content, mode: low(a.content.mode) },
    tools: {
      format: {
        mode: low(t.format.mode),
        sectionStart: t.format.section_start,
        sectionEnd: t.format.section_end,
        perCallStart: t.format.per_call_start,
        perCallEnd: t.format.per_call_end,
        funNameIsKey: t.format.fun_name_is_key,
        toolsArrayWrapped: t.format.tools_array_wrapped,
        openaiWrapperTrigger: t.format.openai_wrapper_trigger,
        functionField: t.format.function_field,
        nameField: t.format.name_field,
        argsField: t.format.args_field,
        idField: t.format.id_field,
        genIdField: t.format.gen_id_field,
        parameterOrder: t.format.parameter_order,
      },
      function: { namePrefix: t.function.name_prefix, nameSuffix: t.function.name_suffix, argsSeparator: t.function.args_separator, close: t.function.close },
      arguments: {
        start: t.arguments.start,
        end: t.arguments.end,
        namePrefix: t.arguments.name_prefix,
        nameSuffix: t.arguments.name_suffix,
        valuePrefix: t.arguments.value_prefix,
        valueSuffix: t.arguments.value_suffix,
        tolerateIntertagWhitespace: t.arguments.tolerate_intertag_whitespace,
      },
      callId: { pos: low(t.call_id.pos), prefix: t.call_id.prefix, suffix: t.call_id.suffix },
    },
  };
}

/** A plausible output in the template's markers: reasoning, content, one call. */
function sampleOutputs(f: ChatOutputSyntax): string[] {
  const r = f.reasoning.end ? `${f.reasoning.mode === "none" ? "" : "Let me think 😀."}${f.reasoning.end}` : "";
  const wrapped = f.content.mode === "always_wrapped" && f.content.start && f.content.end;
  const content = wrapped ? `${f.content.start}Sure "x" {y} 日本${f.content.end}` : `Sure "x" {y} 日本`;
  const t = f.tools;
  const args = { location: 'Paris "6e"', unit: "celsius" };
  let call = "";
  const start = t.format.sectionStart || t.format.perCallStart;
  const end = t.format.sectionStart ? t.format.sectionEnd : t.format.perCallEnd;
  if (t.format.mode === "json_native") {
    const body = t.format.funNameIsKey
      ? { get_current_weather: args }
      : { [t.format.nameField || "name"]: "get_current_weather", [t.format.argsField || "arguments"]: args };
    const json = JSON.stringify(body);
    call = `${start}${t.format.toolsArrayWrapped ? `[${json}]` : json}${end}`;
  } else if (t.format.mode === "tag_with_json") {
    const fn = `${t.function.namePrefix}get_current_weather${t.function.nameSuffix}${t.function.argsSeparator ?? ""}${t.arguments.start}${JSON.stringify(args)}${t.arguments.end}${t.function.close}`;
    call = t.format.perCallStart ? `${t.format.sectionStart}${t.format.perCallStart}${fn}${t.format.perCallEnd}${t.format.sectionEnd}` : `${t.format.sectionStart}${fn}${t.format.sectionEnd}`;
  } else if (t.format.mode === "tag_with_tagged") {
    const a = t.arguments;
    const argText = Object.entries(args)
      .map(([k, v]) => `${a.namePrefix}${k}${a.nameSuffix}${a.valuePrefix}${v}${a.valueSuffix}`)
      .join("");
    const fn = `${t.function.namePrefix}get_current_weather${t.function.nameSuffix}${t.function.argsSeparator ?? ""}${a.start}${argText}${a.end}${t.function.close}`;
    call = t.format.perCallStart ? `${t.format.sectionStart}${t.format.perCallStart}${fn}${t.format.perCallEnd}${t.format.sectionEnd}` : `${t.format.sectionStart}${fn}${t.format.sectionEnd}`;
  }
  return [`${r}${content}`, `${r}${wrapped ? "" : "Calling."}${call}`];
}

interface Variant {
  name: string;
  reasoningFormat: "auto" | "none";
  toolChoice: "auto" | "required" | "none";
  parallel: boolean;
  withTools: boolean;
}

/**
 * Where our tree differs from the reference's on purpose (docs/apply.md, "Differences from the
 * reference"), by template and variant: the tree and grammar are not compared there (the entry
 * must still be needed: identical trees fail), the parses are.
 */
const DEVIATIONS: Record<string, string> = {
  "GigaChat3.1-10B-A1.8B.jinja|reasoning auto, tools auto, parallel": "parallel calls in one section: the comma between calls is optional (the template writes one per line)",
  "MiniMax-M1.jinja|reasoning auto, tools auto, parallel": "parallel calls in one section: the comma between calls is optional (the template writes one per line)",
  "MiniMax-M2.jinja|reasoning auto, tools auto, parallel": "parallel calls in one section: the comma between calls is optional (the template writes one per line)",
};

const VARIANTS: Variant[] = [
  { name: "reasoning auto, tools auto, parallel", reasoningFormat: "auto", toolChoice: "auto", parallel: true, withTools: true },
  { name: "reasoning none, tools required, single", reasoningFormat: "none", toolChoice: "required", parallel: false, withTools: true },
  { name: "reasoning auto, no tools", reasoningFormat: "auto", toolChoice: "auto", parallel: true, withTools: false },
];

describe("chat output parser vs the reference autoparser", () => {
  for (const file of TEMPLATES) {
    it(file, async () => {
      totals.templates++;
      const template = readFileSync(DIR + file, "utf8");
      // Templates with a dedicated reference handler do not go through the autoparser.
      if (detectSpecializedTemplate(template) !== undefined) {
        totals.specialized++;
        return;
      }
      let analysis: any = null;
      for (const v of VARIANTS) {
        const request = {
          messages: [{ role: "user", content: "What is the weather in Paris?" }],
          ...(v.withTools ? { tools: TOOLS, tool_choice: v.toolChoice, parallel_tool_calls: v.parallel } : {}),
          reasoning_format: v.reasoningFormat,
          add_generation_prompt: true,
        };
        const applied = await h.request<any>("chat.templates_apply", { template, request });
        if (!applied.ok || applied.result.format !== "peg-native" || applied.result.parser === null) return; // specialized or failing: not the autoparser
        analysis ??= await h.call<any>("chat.analyze", { template });
        totals.autoparser++;
        const syntax = toSyntax(analysis);
        const arena = buildChatOutputParser(syntax, {
          tools: v.withTools ? TOOLS : [],
          toolChoice: v.toolChoice,
          parallelToolCalls: v.parallel,
          extractReasoning: v.reasoningFormat !== "none",
          supportsToolCalls: analysis.caps.supports_tool_calls,
          generationPrompt: applied.result.generation_prompt,
        });
        const deviation = DEVIATIONS[`${file}|${v.name}`];
        if (deviation !== undefined) {
          expect(structuralArena(arena.toJSON()), `${file} (${v.name}): listed as deviating (${deviation}) but identical`).not.toEqual(structuralArena(applied.result.parser));
        } else {
          // The same tree as the reference's (compared structurally: reachable nodes renumbered in
          // depth-first order), hence the same GBNF too (node-id rule names renamed by first use).
          expect(structuralArena(arena.toJSON()), `${file} (${v.name})`).toEqual(structuralArena(applied.result.parser));
          totals.identicalArenas++;
          // The sampling grammar from the same tree: text, laziness and triggers.
          const g = buildChatGrammar(arena, syntax, {
            tools: v.withTools ? TOOLS : [],
            toolChoice: v.toolChoice,
            parallelToolCalls: v.parallel,
          });
          expect({ grammar: canonicalGbnf(g?.gbnf ?? ""), lazy: g?.lazy ?? false, triggers: g?.triggers ?? [] }, `${file} (${v.name}) grammar`).toEqual({
            grammar: canonicalGbnf(applied.result.grammar),
            lazy: applied.result.grammar_lazy,
            triggers: applied.result.grammar_triggers,
          });
          totals.grammars++;
        }
        const plan = chatPlan(arena, { generationPrompt: applied.result.generation_prompt, referenceMode: true });
        const params = { format: "peg-native", generation_prompt: applied.result.generation_prompt, parser_text: applied.result.parser_text };
        for (const text of sampleOutputs(syntax)) {
          const bytes = encoder.encode(text);
          const cuts = [...Array(bytes.length + 1).keys()].filter((c) => !cutsCharacter(bytes, c));
          const refs = await Promise.all(cuts.map((cut) => h.request<{ msg: RefMsg }>("chat.parse", { params, text_b64: b64(bytes.subarray(0, cut)), partial: true })));
          cuts.forEach((cut, i) => {
            totals.parses++;
            const ref = refs[i]!;
            let ours: ReturnType<typeof parseChatOutput> | LlamapegError;
            try {
              ours = parseChatOutput(plan, bytes.subarray(0, cut), { partial: true });
            } catch (e) {
              ours = e as LlamapegError;
            }
            const where = `${file} (${v.name}): ${JSON.stringify(text)} cut at ${cut}`;
            expect(ours instanceof LlamapegError, `${where}: reference ${ref.ok ? "accepts" : `rejects (${ref.error})`}`).toBe(!ref.ok);
            if (ref.ok && !(ours instanceof LlamapegError)) expect(normOurs(ours), where).toEqual(normRef(ref.result!.msg));
          });
        }
      }
    });
  }
});
