// JSON made once per unchanged container (value.ts toJsonMemo): what a render prints and what it
// is charged must be what making the JSON afresh gives, and a change made in between must show.
import { describe, expect, it } from "vitest";

import { TemplateError } from "../../../lib/jinja/errors.js";
import type { TemplateUsage } from "../../../lib/jinja/limits.js";
import { renderTemplate, renderTemplateMarked } from "../../../lib/jinja/render.js";

const TOOLS = (): unknown[] => [
  { type: "function", function: { name: "a", parameters: { type: "object", properties: { x: { type: "string" } }, required: ["x"] } } },
  { type: "function", function: { name: "b", parameters: { type: "object", properties: {} } } },
];

describe("reused JSON", () => {
  it("shows changes made to the value, or inside it, since it was made", () => {
    const cases: [string, string][] = [
      ["{% set t = tools[1].function %}{{ t | tojson }}|{% set t.name = 'c' %}{{ t | tojson }}", '{"name": "b", "parameters": {"type": "object", "properties": {}}}|{"name": "c", "parameters": {"type": "object", "properties": {}}}'],
      ["{% set r = tools[0].function.parameters.required %}{{ tools[0].function.parameters.required | tojson }}|{{ r.append('y') | length }}|{{ tools[0].function.parameters.required | tojson }}", '["x"]|2|["x", "y"]'],
      ["{{ tools[0] | tojson }}|{{ (tools[0].function.parameters.required.pop() ~ '') | length }}|{{ tools[0].function.parameters | tojson }}", '{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}|1|{"type": "object", "properties": {"x": {"type": "string"}}, "required": []}'],
    ];
    for (const [src, want] of cases) {
      for (let i = 0; i < 3; i++) expect(renderTemplate(src, { tools: TOOLS() }, { inputVariables: ["tools"], reusable: ["tools"] }), src).toBe(want);
    }
  });

  it("keeps its formatting apart", () => {
    const src = "{{ tools[1] | tojson }}|{{ tools[1] | tojson(indent=2) }}|{{ tools[1] | tojson(separators=(',', ':')) }}|{{ tools[1] | tojson }}";
    const out = renderTemplate(src, { tools: TOOLS() }, { reusable: ["tools"] });
    const one = '{"type": "function", "function": {"name": "b", "parameters": {"type": "object", "properties": {}}}}';
    const parts = out.split("|");
    expect(parts[0]).toBe(one);
    expect(parts[1]).toBe(JSON.stringify(JSON.parse(one), null, 2));
    expect(parts[2]).toBe(JSON.stringify(JSON.parse(one)));
    expect(parts[3]).toBe(one);
  });

  it("charges the same budget as JSON made afresh", () => {
    const usage = (src: string, tools: unknown): TemplateUsage => {
      let u: TemplateUsage | undefined;
      renderTemplateMarked(src, { tools }, { inputVariables: ["tools"], reusable: ["tools"], onUsage: (x) => (u = x) });
      return u!;
    };
    // the same JSON twice in one render, and again in the next renders (reused tools): the
    // same charge as two equal values that share nothing
    const twice = "{{ tools[0] | tojson }}{{ tools[0] | tojson }}";
    const apart = "{{ tools[0] | tojson }}{{ tools[1] | tojson }}";
    const fresh = usage(apart, [TOOLS()[0], TOOLS()[0]]);
    for (let i = 0; i < 3; i++) expect(usage(twice, TOOLS())).toEqual(fresh);
  });

  it("fails where JSON made afresh fails when the budget runs out", () => {
    const src = "{{ tools[0] | tojson }}\n{{ tools[0] | tojson }}";
    let steps = 0;
    renderTemplate(src, { tools: TOOLS() }, { onUsage: (u) => (steps = u.steps) });
    // room for the first JSON, not for the second
    const limits = { maxSteps: steps - 20 };
    const fail = (s: string, tools: unknown): TemplateError => {
      try {
        renderTemplate(s, { tools }, { limits, reusable: ["tools"] });
      } catch (e) {
        return e as TemplateError;
      }
      throw new Error("expected a limit error");
    };
    const memo = fail(src, TOOLS());
    const afresh = fail("{{ tools[0] | tojson }}\n{{ tools[1] | tojson }}", [TOOLS()[0], TOOLS()[0]]);
    expect(memo.code).toBe("ERR_TEMPLATE_LIMIT");
    expect(memo.limit).toBe("steps");
    expect([memo.line, memo.column]).toEqual([afresh.line, afresh.column]);
    expect(memo.line).toBe(2);
    expect(memo.message).toBe(afresh.message.replace("tools[1]", "tools[0]"));
  });
});
