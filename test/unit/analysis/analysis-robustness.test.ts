/**
 * Bad templates never escape as anything but a LlamapegError: random Jinja-ish sources either
 * analyse or fail with ERR_TEMPLATE_ANALYSIS naming where.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { analyzeTemplate, clearTemplateAnalysisCache } from "../../../lib/chat/analysis/index.js";

const piece = fc.constantFrom(
  "{% for m in messages %}",
  "{% endfor %}",
  "{% if m.tool_calls %}",
  "{% if tools %}",
  "{% endif %}",
  "{% else %}",
  "{{ m.content }}",
  "{{ m.role }}",
  "{{ m.reasoning_content }}",
  "{{ m.tool_calls[0].function.name }}",
  "{{ m.tool_calls | tojson }}",
  "{{ raise_exception('no') }}",
  "{{ bos_token }}",
  "<|im_start|>",
  "<tool_call>",
  "</tool_call>",
  "[TOOL_CALLS]",
  "<think>",
  "\n",
  "{",
  "}",
  "{{",
  "%}",
  "text",
);

describe("analyzeTemplate on arbitrary sources", () => {
  it("returns an analysis or throws ERR_TEMPLATE_ANALYSIS with a `where`", () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
        const source = pieces.join("");
        try {
          const a = analyzeTemplate(source);
          expect(JSON.parse(JSON.stringify(a))).toEqual(a);
        } catch (e) {
          expect(e).toBeInstanceOf(LlamapegError);
          expect((e as LlamapegError).code).toBe("ERR_TEMPLATE_ANALYSIS");
          expect((e as LlamapegError).where).toBeTruthy();
        }
      }),
      { numRuns: 150 },
    );
  });

  it("rejects a non-string source", () => {
    expect(() => analyzeTemplate(42 as unknown as string)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
  });

  it("keys the cache on the special tokens too", () => {
    clearTemplateAnalysisCache();
    const src = "{% for m in messages %}{{ bos_token }}<u>{{ m.content }}</u>{% endfor %}";
    const a = analyzeTemplate(src, { bosToken: "<s>" });
    const b = analyzeTemplate(src, { bosToken: "[BOS]" });
    expect(a.templateHash).toBe(b.templateHash);
    expect(a.userStart).toBe("<s><u>");
    expect(b.userStart).toBe("[BOS]<u>");
  });
});
