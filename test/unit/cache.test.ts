/**
 * The cache helper (lib/cache.ts): bounded, least recently used out first, every cache registered
 * and emptied by one call; and the plan key, which takes every field a cached plan depends on.
 */
import { describe, expect, it } from "vitest";

import { BoundedCache, boundedCache, clearCaches, registerCache } from "../../lib/cache.js";
import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { clearPlanCache, generationPromptShape, planShape } from "../../lib/chat/apply/cache.js";
import { renderGenerationPrompt } from "../../lib/chat/apply/render.js";
import { normalizeApplyRequest } from "../../lib/chat/apply/request.js";
import { gbnfChecked, markGbnfChecked } from "../../lib/gbnf/checked.js";
import type { Model } from "../../lib/llama/model.js";
import { singleToken } from "../../lib/llama/triggers.js";

describe("BoundedCache", () => {
  it("holds at most its limit and drops the least recently used first", () => {
    const c = new BoundedCache<string, number>(2);
    c.set("a", 1);
    c.set("b", 2);
    expect(c.get("a")).toBe(1); // a is now the most recently used
    c.set("c", 3);
    expect([c.has("a"), c.has("b"), c.has("c"), c.size]).toEqual([true, false, true, 2]);
    c.set("a", 10); // a write is a use too
    c.set("d", 4);
    expect([c.get("a"), c.has("c"), c.get("d")]).toEqual([10, false, 4]);
  });

  it("getOrSet makes a value once", () => {
    const c = new BoundedCache<string, object>(4);
    let made = 0;
    const make = () => ({ n: ++made });
    const first = c.getOrSet("k", make);
    expect(c.getOrSet("k", make)).toBe(first);
    expect(made).toBe(1);
  });

  it("refuses a limit that is not a positive integer", () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) expect(() => new BoundedCache(limit)).toThrow(expect.objectContaining({ code: "ERR_INTERNAL" }));
  });
});

describe("the registry", () => {
  it("one call empties every registered cache", () => {
    const a = boundedCache<string, number>(4);
    const b = new Map<string, number>();
    registerCache(b);
    a.set("x", 1);
    b.set("y", 2);
    clearCaches();
    expect([a.size, b.size]).toEqual([0, 0]);
  });

  it("clearPlanCache is that call: a plan built after it is built anew", () => {
    const src = "{% for m in messages %}{{ m.content }}{% endfor %}";
    const req = { messages: [{ role: "user", content: "hi" }] };
    const a = applyChatTemplate(src, req);
    expect(applyChatTemplate(src, req).parser).toBe(a.parser);
    const other = boundedCache<string, number>(1);
    other.set("k", 1);
    clearPlanCache();
    expect(other.size).toBe(0);
    expect(applyChatTemplate(src, req).parser).not.toBe(a.parser);
  });
});

describe("caches on the registry", () => {
  it("the checked-grammar cache is emptied by clearCaches", () => {
    markGbnfChecked('root ::= "a"');
    expect(gbnfChecked('root ::= "a"')).toBe(true);
    expect(gbnfChecked('root ::= "a"', "other")).toBe(false);
    clearCaches();
    expect(gbnfChecked('root ::= "a"')).toBe(false);
  });

  it("a model's single-token lookups are kept per model and emptied by clearCaches", () => {
    let calls = 0;
    const model = { tokenize: (text: string) => (calls++, text === "<tool_call>" ? Int32Array.of(7) : Int32Array.of(1, 2)) } as unknown as Model;
    expect([singleToken(model, "<tool_call>"), singleToken(model, "two tokens")]).toEqual([7, null]);
    expect([singleToken(model, "<tool_call>"), singleToken(model, "two tokens")]).toEqual([7, null]);
    expect(calls).toBe(2);
    clearCaches();
    expect(singleToken(model, "<tool_call>")).toBe(7);
    expect(calls).toBe(3);
  });
});

describe("the plan key", () => {
  it("is a projection without the fields that shape only the prompt", () => {
    const shape = planShape(normalizeApplyRequest({ messages: [{ role: "user", content: "x" }], now: new Date(0) }));
    expect(Object.keys(shape)).not.toContain("messages");
    expect(Object.keys(shape)).not.toContain("now");
    expect(Object.keys(shape)).toContain("jsonSchemaWhere");
  });

  it("holds where the schema came from: the cached warnings name that field", () => {
    clearPlanCache();
    const src = "{% for m in messages %}{{ m.content }}{% endfor %}";
    // a keyword the grammar cannot enforce: the plan warns, naming the field the schema came from
    const schema = { type: "object", properties: { a: { type: "array", items: { type: "string" }, uniqueItems: true } } };
    const messages = [{ role: "user", content: "hi" }];
    const direct = applyChatTemplate(src, { messages, json_schema: schema });
    const viaFormat = applyChatTemplate(src, { messages, response_format: { type: "json_schema", json_schema: { name: "s", schema } } });
    expect(direct.warnings.length).toBeGreaterThan(0);
    expect(direct.warnings.every((w) => w.startsWith("json_schema:"))).toBe(true);
    expect(viaFormat.warnings.length).toBeGreaterThan(0);
    expect(viaFormat.warnings.every((w) => w.startsWith("response_format.json_schema.schema:"))).toBe(true);
  });
});

describe("the generation prompt key", () => {
  it("is a projection that holds reference mode, not the clock", () => {
    const req = normalizeApplyRequest({ messages: [{ role: "user", content: "x" }], now: new Date(0) });
    const shape = generationPromptShape(req);
    expect(Object.keys(shape)).toContain("referenceMode");
    expect(Object.keys(shape)).not.toContain("now");
    expect(generationPromptShape({ ...req, referenceMode: true })).not.toEqual(shape);
  });

  it("tells reference mode apart: it changes how the generation prompt prints floats", () => {
    clearPlanCache();
    // without add_generation_prompt the render ends "0.1234": the generation prompt is what follows
    // it, "57X" with reference printing (0.123457), "5657X" with Python's (0.12345657)
    const src = "{{ messages[0].content }}{% if add_generation_prompt %}{{ t | tojson }}X{% else %}0.1234{% endif %}";
    const req = { messages: [{ role: "user", content: "hi" }], chat_template_kwargs: { t: 0.12345657 } };
    expect(applyChatTemplate(src, { ...req, reference_mode: true }).generationPrompt).toBe(renderGenerationPrompt(src, { ...req, reference_mode: true }));
    // the reference-mode entry ("57X") is a suffix of this prompt: a key without referenceMode took it
    expect(applyChatTemplate(src, req).generationPrompt).toBe(renderGenerationPrompt(src, req));
    expect(renderGenerationPrompt(src, req)).toBe("5657X");
  });
});
