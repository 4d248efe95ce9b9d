/**
 * Each inference of the analysis on a small synthetic template (test/fixtures/analysis/) whose
 * syntax is known by construction.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

import { analyzeTemplate, isContentAlwaysWrapped } from "../../../lib/chat/analysis/index.js";

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/analysis/${name}.jinja`, import.meta.url), "utf8");
const analyze = (name: string) => analyzeTemplate(fixture(name), { bosToken: "<s>", eosToken: "</s>" });

describe("reasoning", () => {
  it("finds the markers around rendered reasoning", () => {
    const a = analyze("chatml-think");
    expect(a.reasoning).toEqual({ mode: "tag_based", start: "<think>", end: "</think>" });
    expect(a.preservedTokens).toEqual(["<think>", "</think>"]);
  });

  it("finds a start-only marker that thinking mode adds to the generation prompt", () => {
    expect(analyze("think-prompt-only").reasoning).toEqual({ mode: "tag_based", start: "<think>", end: "" });
  });

  it("finds the closed block that thinking-off adds", () => {
    const r = analyze("think-closed-when-off").reasoning;
    expect(r.mode).toBe("tag_based");
    expect(r.end).toBe("<think>\n\n</think>");
  });

  it("detects reasoning rendered only next to tool calls", () => {
    expect(analyze("tools-only-reasoning").reasoning).toEqual({ mode: "tools_only", start: "<|think|>", end: "<|/think|>" });
  });

  it("keeps whitespace that belongs to the markers", () => {
    const r = analyze("tagged-tools").reasoning;
    expect(r).toEqual({ mode: "tag_based", start: "<think>\n", end: "\n</think>\n" });
  });
});

describe("content and turns", () => {
  it("finds content wrapped in markers", () => {
    const a = analyze("wrapped-content");
    expect(a.content).toMatchObject({ mode: "always_wrapped", start: "<answer>", end: "</answer>" });
    expect(isContentAlwaysWrapped(a.content)).toBe(true);
    expect(isContentAlwaysWrapped(analyze("json-tools").content)).toBe(false);
    expect(a.userStart).toBe("<user>");
  });

  it("finds plain content and the turn starts", () => {
    const a = analyze("json-tools");
    expect(a.content.mode).toBe("plain");
    expect(a.userStart).toBe("<|im_start|>user");
    expect(a.assistantStart).toBe("<|im_start|>assistant");
  });
});

describe("tool-call syntaxes", () => {
  it("reads a JSON-native call with a repeated per-call tag", () => {
    const f = analyze("json-tools").tools.format;
    expect(f).toMatchObject({
      mode: "json_native",
      sectionStart: "",
      sectionEnd: "",
      perCallStart: "<tool_call>\n",
      perCallEnd: "</tool_call>",
      nameField: "name",
      argsField: "arguments",
      toolsArrayWrapped: false,
      parameterOrder: ["name", "arguments"],
    });
  });

  it("reads an array-wrapped JSON section with the call id field", () => {
    const a = analyze("array-tools");
    expect(a.tools.format).toMatchObject({
      mode: "json_native",
      sectionStart: "[TOOL_CALLS]",
      sectionEnd: "",
      toolsArrayWrapped: true,
      idField: "id",
      parameterOrder: ["name", "arguments", "id"],
    });
    expect(a.caps.supportsToolCalls).toBe(true);
  });

  it("reads tag + tagged arguments", () => {
    const t = analyze("tagged-tools").tools;
    expect(t.format).toMatchObject({ mode: "tag_with_tagged", perCallStart: "<tool_call>\n", perCallEnd: "</tool_call>" });
    expect(t.function).toEqual({ namePrefix: "<function=", nameSuffix: ">\n", argsSeparator: "", close: "</function>\n" });
    expect(t.arguments).toMatchObject({ namePrefix: "<parameter=", nameSuffix: ">\n", valuePrefix: "", valueSuffix: "\n</parameter>\n" });
  });

  it("reads tag + JSON arguments with the call id between name and arguments", () => {
    const t = analyze("call-id-tools").tools;
    expect(t.format).toMatchObject({ mode: "tag_with_json", perCallStart: "[TOOL_CALLS]" });
    expect(t.function.nameSuffix).toBe("[ARGS]");
    expect(t.callId).toEqual({ pos: "between_func_and_args", prefix: "[CALL_ID]", suffix: "[ARGS]" });
  });

  it("reads per-call open/close tags around a tag + JSON call", () => {
    const f = analyze("wrapped-content").tools.format;
    expect(f).toMatchObject({ mode: "tag_with_json", perCallStart: "<call>", perCallEnd: "</call>" });
  });

  it("reads JSON calls keyed by the function name inside an array", () => {
    const f = analyze("name-as-key").tools.format;
    expect(f).toMatchObject({ mode: "json_native", funNameIsKey: true, toolsArrayWrapped: true, nameField: "", argsField: "" });
    expect([f.sectionStart, f.sectionEnd]).toEqual(["<calls>", "</calls>"]);
  });

  it("reads a generated id field and renamed argument field", () => {
    const f = analyze("generated-id-field").tools.format;
    expect(f).toMatchObject({ mode: "json_native", genIdField: "tool_call_id", argsField: "parameters", idField: "" });
    expect(f.parameterOrder).toEqual(["tool_call_id", "name", "parameters"]);
  });

  it("finds a call id after the arguments", () => {
    expect(analyze("id-after-args").tools.callId).toEqual({ pos: "post_args", prefix: "[ID]", suffix: "</call>" });
  });

  it("finds a call id before the function name, inside section and per-call tags", () => {
    const t = analyze("id-before-name").tools;
    expect(t.callId).toEqual({ pos: "pre_func_name", prefix: "[ID]", suffix: "[NAME]" });
    expect(t.format).toMatchObject({ sectionStart: "<calls>", sectionEnd: "</calls>", perCallStart: "<call>", perCallEnd: "</call>" });
  });

  it("reads nested section, call and argument tags", () => {
    const t = analyze("section-and-call-tags").tools;
    expect(t.format).toMatchObject({
      mode: "tag_with_tagged",
      sectionStart: "<calls>\n",
      sectionEnd: "</calls>",
      perCallStart: "<call>\n",
      perCallEnd: "</call>",
    });
    expect(t.arguments).toMatchObject({ namePrefix: "<key>", nameSuffix: "</key>", valuePrefix: "<value>", valueSuffix: "</value>" });
    // the reference reads the argument wrapper's open/close as separator/closer; kept for parity
    // (test/conformance/analysis.test.ts checks these fixtures against it)
    expect(t.function).toEqual({ namePrefix: "<name>", nameSuffix: "", argsSeparator: "</name>\n<arg>", close: "</arg>\n" });
  });

  it("reports no tool syntax for a template that ignores tool calls", () => {
    const a = analyze("chatml-think");
    expect(a.caps.supportsToolCalls).toBe(false);
    expect(a.tools.format.mode).toBe("none");
  });
});

describe("failures", () => {
  it("names the probe when the template cannot be analysed", () => {
    expect(() => analyze("raises")).toThrow(expect.objectContaining({ code: "ERR_TEMPLATE_ANALYSIS", where: "baseline" }));
    expect(() => analyze("syntax-error")).toThrow(expect.objectContaining({ code: "ERR_TEMPLATE_ANALYSIS", where: "template" }));
    expect(() => analyze("python-args")).toThrow(expect.objectContaining({ code: "ERR_TEMPLATE_ANALYSIS", where: "tools.json_native" }));
  });

  it("lists probes that failed to render, and throws on them in strict mode", () => {
    const a = analyze("raises-with-tools");
    expect(a.probeFailures.map((f) => f.probe)).toContain("content.vs_tool_call");
    expect(a.probeFailures[0]!.message).toContain("tools are not supported");
    expect(() => analyzeTemplate(fixture("raises-with-tools"), { strict: true })).toThrow(
      expect.objectContaining({ code: "ERR_TEMPLATE_ANALYSIS", where: "content.vs_tool_call" }),
    );
  });
});
