/**
 * The plan's grammar admits the calls the template itself writes, wherever the reference's does:
 * for every vendored template and every conversation of test/fixtures/apply/conversations.json
 * whose reply calls tools (text before the call dropped), the template's own rendering of that
 * reply (`renderedOutput`) is fed to our plan's grammar and to the reference's
 * (`common_chat_templates_apply`), both for `tool_choice: "required"` (ours: calls only, the
 * default) and `"auto"` (lazy: from the first trigger word on), through llama.cpp's own GBNF
 * matcher (harness `grammar.check`). Where the reference's grammar follows the template's syntax
 * and ours rejects it, the model (trained on that syntax) would be forced into one it never saw:
 * that fails. Where neither follows it, the case is printed (the template renders history in a
 * form no grammar of either side generates).
 *
 * A template renders a past call as it stores it, which is not always what the model writes: a
 * space or newline before the call, an empty think block, and after the call the end-of-turn
 * marker (an end token: the sampler stops on it before any grammar sees it) and the next turn's
 * opener. Those are taken out (`candidates`); one accepted candidate is enough.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { getHarness, type Harness } from "../support/harness.js";
import { BOS, EOS, conversations, ourRequest, readTemplate, referenceRequest, renderedOutput, templateFiles } from "./apply-outputs.js";

process.env.TZ = "UTC";

let h: Harness;
beforeAll(async () => {
  h = await getHarness();
});
afterAll(() => h?.close());

// One trailing marker token: <|x|>, <｜x｜>, <|x>, <x|>, <SPECIAL_n>, [X], or the head of one whose
// tail renderedOutput took off as the end-of-turn suffix it shares with a plain reply (`<|call`).
const TRAILING_MARKER = /\s*(?:<[|｜][^<>]*[|｜]>|<\|[^<>|]+>|<[^<>|]+\|>|<SPECIAL_\d+>|\[[A-Z_]+\]|<[|｜][^<>|｜]*)\s*$/u;

function candidates(output: string, thinkingStart: string): string[] {
  const starts = [output, output.trimStart(), output.replace(/^\s*<think>\s*<\/think>\s*/, "")];
  if (thinkingStart !== "") starts.push(output.replace(new RegExp(`^\\s*${thinkingStart.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*`), ""));
  const out: string[] = [];
  for (const s of starts) {
    // up to two markers off the end (an end token, then the next turn's opener)
    let t = s;
    out.push(t, t.trimStart());
    for (let k = 0; k < 2 && TRAILING_MARKER.test(t); k++) {
      t = t.replace(TRAILING_MARKER, "");
      out.push(t, t.trimStart());
    }
  }
  return [...new Set(out)];
}

/**
 * The inputs a grammar sees: after the prefill when eager; when lazy, from where the first trigger
 * fires (a word at its start; a pattern at its first capture group, or its match; a full pattern
 * only when it matches the whole text), as llama.cpp's lazy sampler starts it.
 */
function grammarInputs(texts: string[], lazy: boolean, triggers: { type: string; value: string }[], prefill: string): string[] | null {
  if (!lazy) return texts.map((t) => prefill + t);
  const startOf = (t: string): number => {
    let best = Infinity;
    for (const tr of triggers) {
      if (tr.type === "word" || tr.type === "token") {
        const i = t.indexOf(tr.value);
        if (i >= 0) best = Math.min(best, i);
        continue;
      }
      const source = tr.type === "pattern_full" ? `^(?:${tr.value})$` : tr.value;
      const m = new RegExp(source, "sd").exec(t);
      if (m === null) continue;
      best = Math.min(best, m.indices?.[1]?.[0] ?? m.index);
    }
    return best;
  };
  const out = texts.flatMap((t) => {
    const at = startOf(t);
    return Number.isFinite(at) ? [t.slice(at)] : [];
  });
  return out.length > 0 ? out : null;
}

interface Check {
  valid: boolean;
  error?: string;
  results: { accepted: boolean; complete: boolean; consumed: number }[];
}
interface RefPlan {
  grammar?: string;
  grammar_lazy?: boolean;
  /** type: "word", "token", "pattern" or "pattern_full" (the harness names them) */
  grammar_triggers?: { type: string; value: string }[];
  generation_prompt?: string;
}

const calling = conversations().filter((c) => (c.expected as { tool_calls?: unknown[] }).tool_calls?.length);

describe("a plan's grammar admits the template's own tool calls", () => {
  it("wherever the reference's grammar does, on every vendored template and calling conversation", async () => {
    const failures: string[] = [];
    const neither: string[] = [];
    let compared = 0;
    for (const file of templateFiles()) {
      const source = readTemplate(file);
      for (const conv of calling) {
        const reply = { ...(conv.expected as Record<string, unknown>), content: "" };
        for (const choice of ["required", "auto"] as const) {
          const c = { ...conv, tool_choice: choice };
          let plan;
          try {
            const req = ourRequest(c);
            plan = applyChatTemplate(source, { ...req, calls_only: undefined } as typeof req);
          } catch {
            continue; // no tool support: not this test's subject
          }
          if (plan.grammar === null) continue;
          const ref = await h.request<RefPlan>("chat.templates_apply", { template: source, bos_token: BOS, eos_token: EOS, request: referenceRequest(c, conv.messages, true) });
          if (!ref.ok || !ref.result!.grammar) continue;
          const output = await renderedOutput(h, source, c, plan.generationPrompt, plan.thinkingStartTag, reply);
          if (output === null) continue;
          const texts = candidates(output, plan.thinkingStartTag);
          const oursIn = grammarInputs(texts, plan.grammar.lazy, plan.grammar.triggers, plan.grammar.prefill);
          const refTriggers = ref.result!.grammar_triggers ?? [];
          const refIn = grammarInputs(texts, ref.result!.grammar_lazy === true, refTriggers, ref.result!.grammar_lazy ? "" : (ref.result!.generation_prompt ?? ""));
          if (oursIn === null || refIn === null) continue;
          const [o, r] = await Promise.all([
            h.call<Check>("grammar.check", { gbnf: plan.grammar.gbnf, inputs: oursIn }),
            h.call<Check>("grammar.check", { gbnf: ref.result!.grammar!, inputs: refIn }),
          ]);
          compared++;
          const where = `${file} ${conv.name} ${choice}`;
          if (!o.valid) {
            failures.push(`${where}: our grammar does not load: ${o.error}`);
            continue;
          }
          const oursOk = o.results.some((x) => x.accepted);
          const refOk = r.valid && r.results.some((x) => x.accepted);
          if (oursOk) continue;
          const best = o.results.reduce((a, b) => (b.consumed > a.consumed ? b : a));
          const text = Buffer.from(oursIn[o.results.indexOf(best)]!);
          const at = `rejected after ${JSON.stringify(text.subarray(Math.max(0, best.consumed - 40), best.consumed).toString())} at ${JSON.stringify(text.subarray(best.consumed, best.consumed + 40).toString())}`;
          (refOk ? failures : neither).push(`${where}: ${at}`);
        }
      }
    }
    if (neither.length > 0) console.log(`neither grammar follows the template's rendering (${neither.length}):\n${neither.join("\n")}`);
    expect(compared).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  }, 300_000);
});
