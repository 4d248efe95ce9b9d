// Converted tools reused between renders (lib/jinja/reuse.ts): a render that reuses them
// must be exactly the render that converts them afresh, whatever the caller changed in its data
// and whatever the template changed in the values while rendering.
import { describe, expect, it } from "vitest";

import { JsonFloat } from "../../../lib/jinja/value.js";
import { clearReusedValues } from "../../../lib/jinja/reuse.js";
import { renderTemplateMarked } from "../../../lib/jinja/render.js";

const TOOLS = (): Record<string, unknown>[] => [
  { type: "function", function: { name: "get_weather", description: "Weather <now>", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "", parameters: { type: "object", properties: {} } } },
];

/** Render with reuse, and the same render converting everything afresh. */
function both(src: string, tools: unknown, inputs = ["tools"]): [ReturnType<typeof renderTemplateMarked>, ReturnType<typeof renderTemplateMarked>] {
  const reused = renderTemplateMarked(src, { tools }, { inputVariables: inputs, reusable: ["tools"] });
  const fresh = renderTemplateMarked(src, { tools }, { inputVariables: inputs });
  return [reused, fresh];
}

describe("reused tool values", () => {
  const src = "{% for t in tools %}{{ t.function.name }}:{{ t.function | tojson }};{{ t.type }}|{% endfor %}";

  it("renders the same text and marks as a fresh conversion, render after render", () => {
    clearReusedValues();
    const first = both(src, TOOLS());
    expect(first[0]).toEqual(first[1]);
    expect(first[0].marks.length).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) {
      const [reused, fresh] = both(src, TOOLS());
      expect(reused).toEqual(fresh);
      expect(reused).toEqual(first[0]);
    }
  });

  it("sees a change the caller made to its data between renders", () => {
    clearReusedValues();
    const tools = TOOLS();
    both(src, tools);
    const edits: ((t: any) => void)[] = [
      (t) => (t[0].function.description = "changed"),
      (t) => (t[0].function.parameters.properties.city.type = "integer"),
      (t) => (t[0].function.parameters.required = ["city", "x"]),
      (t) => (t[1].function.parameters.properties = { b: 1, a: 2 }),
      (t) => (t[1].function.parameters.properties = { a: 2, b: 1 }),
      (t) => (t[1].function.parameters.properties.a = 2.5),
      (t) => (t[1].function.parameters.properties.a = -0),
      (t) => (t[1].function.parameters.properties.a = 0),
      (t) => (t[1].function.parameters.properties.a = new JsonFloat(0)),
      (t) => (t[1].function.parameters.properties.a = null),
      (t) => (t[1].function.parameters.properties.a = "0"),
      (t) => (t[1].function.parameters.properties.a = [0]),
      (t) => (t[1].function.parameters.properties.a = { 0: 0 }),
      (t) => (t[1].type = "function "),
      (t) => t.push({ type: "function", function: { name: "third" } }),
      (t) => t.pop(),
    ];
    const texts = new Set<string>();
    for (const edit of edits) {
      edit(tools);
      const [reused, fresh] = both(src, tools);
      expect(reused).toEqual(fresh);
      texts.add(reused.text);
    }
    // every edit shows in the prompt but one: the pop restores the tools as they were before the
    // push (JsonFloat(0) prints as 0.0, as json.dumps does; llama.cpp's style prints it as 0)
    expect(texts.size).toBe(edits.length - 1);
  });

  it("converts afresh what it cannot compare (Maps, Dates, sparse arrays, class instances)", () => {
    clearReusedValues();
    class Box {
      constructor(readonly inner = 1) {}
    }
    const odd = (): unknown[] => [{ m: new Map([["k", 1]]), d: new Date(0), s: [1, , 3], b: new Box(), n: NaN, f: new JsonFloat(2) }];
    for (let i = 0; i < 3; i++) {
      const [reused, fresh] = both("{{ tools | tojson }}", odd());
      expect(reused).toEqual(fresh);
    }
  });

  it("keeps marks apart: the same data as input and as plain data", () => {
    clearReusedValues();
    const [marked] = both(src, TOOLS(), ["tools"]);
    const [plain, fresh] = both(src, TOOLS(), []);
    expect(plain).toEqual(fresh);
    expect(plain.marks).toEqual([]);
    expect(marked.marks.length).toBeGreaterThan(0);
    expect(plain.text).toBe(marked.text);
  });

  it("does not carry a template's changes to the values into the next render", () => {
    const sameParameters = (): Record<string, unknown>[] =>
      TOOLS().map((t: any) => ({ ...t, function: { ...t.function, parameters: { type: "object", properties: {}, required: ["city"] } } }));
    const mutating = [
      // a member set on a tool
      "{% set f = tools[0].function %}{% set f.name = f.name ~ '!' %}{{ tools[0].function.name }}",
      // an append to a list inside a tool
      "{% set r = tools[0].function.parameters.required %}{{ r.append('more') | length }}{{ r | tojson }}",
      // a pop from the tools list itself
      "{{ tools.pop() | length }}{{ tools | length }}",
      // the same text put back with other marks
      "{% set f = tools[0].function %}{% set f.name = 'get_weather' %}{{ tools[0].function.name }}",
      // two places made to share one object holding equal data: the next render's change to
      // one must not show in the other
      "{% set a = tools[0].function %}{% set b = tools[1].function %}{% set r = a.parameters.required %}{{ r.append('z') | length }}|{{ b.parameters.required | tojson }}{{ r.pop() }}{% set b.parameters = a.parameters %}",
    ];
    for (const m of mutating) {
      clearReusedValues();
      const once = both(m, sameParameters());
      expect(once[0]).toEqual(once[1]);
      for (let i = 0; i < 3; i++) {
        const [reused, fresh] = both(m, sameParameters());
        expect(reused).toEqual(fresh);
        expect(reused).toEqual(once[0]);
      }
    }
  });

  it("a render that fails leaves nothing changed behind", () => {
    clearReusedValues();
    const failing = "{% set f = tools[0].function %}{% set f.name = 'x' %}{{ raise_exception('no') }}";
    expect(() => renderTemplateMarked(failing, { tools: TOOLS() }, { inputVariables: ["tools"], reusable: ["tools"] })).toThrow(/no/);
    const [reused, fresh] = both(src, TOOLS());
    expect(reused).toEqual(fresh);
    expect(reused.text).toContain("get_weather:");
  });
});
