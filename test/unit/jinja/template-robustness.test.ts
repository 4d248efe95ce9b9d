// Whatever the template text, rendering ends in a string or a LlamapegError, never another
// exception from inside the parser or the evaluator.
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { renderChatTemplate } from "../../../lib/chat/apply/render.js";
import { renderTemplate } from "../../../lib/jinja/index.js";

const fragment = fc.constantFrom(
  "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", " if ", " for ", " in ", " endif ", " endfor ", " else ", " set ",
  " x ", " messages ", "[0]", ".content", " | ", "tojson", "length", "(", ")", "[", "]", "'a'", '"b"', "1", "2.5",
  " + ", " ~ ", " == ", " and ", " not ", " is ", "defined", "none", " = ", ",", ":", "{", "}", "macro ", "endmacro",
  "raise_exception('boom')", "range(3)", "namespace(a=1)", "loop.index", "\n", " ", "text",
);
const templateText = fc.array(fragment, { maxLength: 30 }).map((a) => a.join(""));

function outcome(f: () => string): "ok" | "error" {
  try {
    expect(typeof f()).toBe("string");
    return "ok";
  } catch (e) {
    if (!(e instanceof LlamapegError)) throw e;
    expect(["ERR_TEMPLATE_RENDER", "ERR_INVALID_REQUEST"]).toContain(e.code);
    return "error";
  }
}

describe("template robustness", () => {
  it("random template text renders or fails with a LlamapegError", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(templateText, (src) => {
        seen.add(outcome(() => renderTemplate(src, { messages: [{ role: "user", content: "hi" }], x: [1, 2] })));
        seen.add(outcome(() => renderChatTemplate(src, { messages: [{ role: "user", content: "hi" }] })));
      }),
      { seed: 424242, numRuns: 300 },
    );
    // both outcomes occur, so the property is not vacuous
    expect([...seen].sort()).toEqual(["error", "ok"]);
  });
});
