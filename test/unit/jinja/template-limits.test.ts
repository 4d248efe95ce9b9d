// Render budgets: hostile templates end in ERR_TEMPLATE_LIMIT naming the budget and the line and
// column, the limits are configurable, and every vendored template stays far inside the defaults.
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { prepareChatContext, renderChatTemplate } from "../../../lib/chat/apply/render.js";
import { renderTemplate } from "../../../lib/jinja/index.js";
import type { TemplateError } from "../../../lib/jinja/errors.js";
import { DEFAULT_TEMPLATE_LIMITS, type TemplateLimits, type TemplateUsage } from "../../../lib/jinja/limits.js";
import { LlamapegError } from "../../../lib/errors.js";

function fail(src: string, limits?: TemplateLimits, vars: Record<string, unknown> = {}): TemplateError {
  try {
    renderTemplate(src, vars, limits ? { limits } : {});
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as TemplateError;
  }
  throw new Error(`rendered: ${src}`);
}

// `at`: the text the error must point at (its first occurrence); absent: only that a line and column is given
const cases: { name: string; src: string; limit: string; at?: string }[] = [
  { name: "a loop of 10^10 iterations", src: "{% for i in range(100000) %}\n{% for j in range(100000) %}{% endfor %}{% endfor %}", limit: "steps" },
  { name: "range() of 10^9 items", src: "{{ range(1000000000) }}", limit: "items", at: "range(" },
  { name: "string repetition past the output limit", src: "x\n{{ ('a' * 134217729) | replace('a', 'b') }}", limit: "output", at: "* 134217729" },
  { name: "doubling a string", src: "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", limit: "output", at: "~ ns.s" },
  { name: "replace('', big) sized first", src: "{{ ('a' * 100000) | replace('', 'b' * 1000) }}", limit: "output", at: "replace(" },
  { name: "unbounded macro recursion", src: "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", limit: "nesting" },
  { name: "a list that contains itself", src: "{% set a = [] %}{% set _ = a.append(a) %}{{ a }}", limit: "nesting", at: "a }}" },
  { name: "deep nesting built in a loop", src: "{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x | tojson }}", limit: "nesting", at: "tojson" },
  { name: "a DAG of 2^60 paths printed as JSON", src: "{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x | tojson }}", limit: "steps", at: "tojson" },
  { name: "many large strings kept alive", src: "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set _ = ns.l.append(('x' * 10000000) ~ i) %}{% endfor %}", limit: "memory" },
  { name: "an array doubled", src: "{% set ns = namespace(a=[1]) %}{% for i in range(100) %}{% set ns.a = ns.a + ns.a %}{% endfor %}", limit: "items", at: "+ ns.a" },
  { name: "a long chain of additions", src: "{{ " + Array(2000).fill("1").join(" + ") + " }}", limit: "nesting" },
  { name: "deeply nested brackets (the parser)", src: "{{ " + "(".repeat(20000) + "1" + ")".repeat(20000) + " }}", limit: "nesting" },
];

/** 1-based line and column of the first occurrence of `at` in `src`. */
function positionOf(src: string, at: string): { line: number; column: number } {
  const offset = src.indexOf(at);
  const before = src.slice(0, offset);
  return { line: before.split("\n").length, column: offset - before.lastIndexOf("\n") };
}

describe("template limits", () => {
  for (const c of cases) {
    it(`${c.name}: ERR_TEMPLATE_LIMIT (${c.limit})`, () => {
      const e = fail(c.src);
      expect(e.code, e.message).toBe("ERR_TEMPLATE_LIMIT");
      expect(e.limit, e.message).toBe(c.limit);
      expect(e.where).toMatch(/^template [0-9a-f]{12} line \d+, column \d+$/);
      expect(e.line).toBeGreaterThan(0);
      expect(e.column).toBeGreaterThan(0);
      if (c.at !== undefined) expect({ line: e.line, column: e.column }, e.message).toEqual(positionOf(c.src, c.at));
    });
  }

  it("limits are configurable per render", () => {
    const loop = "{% for i in range(1000) %}{{ i }}{% endfor %}";
    expect(renderTemplate(loop, {})).toHaveLength(2890);
    expect(fail(loop, { maxSteps: 1000 }).limit).toBe("steps");
    expect(fail(loop, { maxOutputLength: 100 }).limit).toBe("output");
    expect(fail(loop, { maxItems: 999 }).limit).toBe("items");
    expect(fail("{{ [[[[[1]]]]] }}", { maxNesting: 4 }).limit).toBe("nesting");
    expect(fail("{{ 'x' * 1000 }}{{ 'y' * 1000 }}", { maxAllocation: 1500 }).limit).toBe("memory");
    expect(renderTemplate(loop, {}, { limits: { maxSteps: Infinity } })).toHaveLength(2890);
  });

  it("rejects malformed limits", () => {
    expect(() => renderTemplate("x", {}, { limits: { maxSteps: -1 } })).toThrow(RangeError);
    expect(() => renderTemplate("x", {}, { limits: { maxStep: 1 } as TemplateLimits })).toThrow(/unknown template limit/);
  });

  it("a hostile template in the chat path is ERR_TEMPLATE_LIMIT too (capability probes included)", () => {
    // hangs only on the probes' five-message conversation, never on the user's one message
    const probeBomb = "{% if messages | length == 5 %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}{{ messages[0].content }}";
    for (const src of [probeBomb, "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"]) {
      let e: unknown;
      try {
        renderChatTemplate(src, { messages: [{ role: "user", content: "hi" }] });
      } catch (err) {
        e = err;
      }
      expect(e).toBeInstanceOf(LlamapegError);
      expect((e as TemplateError).code).toBe("ERR_TEMPLATE_LIMIT");
      expect((e as TemplateError).limit).toBe("steps");
    }
  });
});

describe("template limits: real templates", () => {
  const dir = path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates");
  const conversations = fs
    .readdirSync(path.resolve(import.meta.dirname, "../../fixtures/conversations"))
    .map((f) => JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../fixtures/conversations", f), "utf8")) as Record<string, unknown>);

  it("every vendored template renders every fixture conversation with under 1% of each default budget", () => {
    const peak: TemplateUsage = { steps: 0, allocated: 0, nesting: 0 };
    let renders = 0;
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith(".jinja"))) {
      const src = fs.readFileSync(path.join(dir, f), "utf8");
      for (const c of conversations) {
        let prepared;
        try {
          prepared = prepareChatContext(src, { messages: c.messages as unknown[], tools: c.tools as unknown[] | undefined, chat_template_kwargs: c.chat_template_kwargs as Record<string, unknown> | undefined });
        } catch {
          continue;
        }
        try {
          renderTemplate(prepared.source, { ...prepared.variables, add_generation_prompt: true }, {
            onUsage: (u) => {
              peak.steps = Math.max(peak.steps, u.steps);
              peak.allocated = Math.max(peak.allocated, u.allocated);
              peak.nesting = Math.max(peak.nesting, u.nesting);
            },
          });
          renders++;
        } catch (e) {
          // templates that raise on a conversation they do not support (the reference raises too)
          expect((e as LlamapegError).code).toBe("ERR_TEMPLATE_RENDER");
        }
      }
    }
    expect(renders).toBeGreaterThan(1000);
    expect(peak.steps).toBeLessThan(DEFAULT_TEMPLATE_LIMITS.maxSteps / 100);
    expect(peak.allocated).toBeLessThan(DEFAULT_TEMPLATE_LIMITS.maxAllocation / 100);
    expect(peak.nesting).toBeLessThan(DEFAULT_TEMPLATE_LIMITS.maxNesting / 4);
  });
});

describe("template limits: analysis", () => {
  it("a template that hangs only on an analysis probe fails at the first such probe, not after all of them", async () => {
    const { analyzeTemplate } = await import("../../../lib/chat/analysis/index.js");
    // renders normally for the capability probes; loops on a tool call named like the analysis' own
    const src =
      "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}{% if c.function.name != 'tool1' %}" +
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}{% endfor %}{% endif %}" +
      "<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    let code: string | undefined;
    let limit: string | undefined;
    try {
      analyzeTemplate(src, { bosToken: "", eosToken: "" });
    } catch (e) {
      code = (e as TemplateError).code;
      limit = (e as TemplateError).limit;
    }
    expect(code).toBe("ERR_TEMPLATE_LIMIT");
    expect(limit).toBe("steps");
  });
});
