// Loops whose body cannot read `loop` get no loop object (lib/jinja/loop-use.ts); every
// way a body can still read it must find it there.
import { describe, expect, it } from "vitest";

import { renderTemplate } from "../../../lib/jinja/render.js";
import { DEFAULT_TEMPLATE_LIMITS, type TemplateUsage } from "../../../lib/jinja/limits.js";

const xs = ["a", "b", "c"];
const render = (src: string): string => renderTemplate(src, { xs });

describe("the loop object", () => {
  it("is there wherever the body can read it", () => {
    const cases: [string, string][] = [
      ["{% for x in xs %}{{ loop.index }}{% endfor %}", "123"],
      ["{% for x in xs %}{% if x %}{{ loop.revindex0 }}{% endif %}{% endfor %}", "210"],
      ["{% for x in xs %}{% for y in [1] %}{% endfor %}{{ loop.last }}{% endfor %}", "FalseFalseTrue"],
      ["{% for x in xs %}{% for y in [1, 2] %}{{ loop.index }}{% endfor %}{% endfor %}", "121212"],
      // a macro sees its caller's variables: the loop object of the loop it is called from
      ["{% macro m() %}{{ loop.index }}{% endmacro %}{% for x in xs %}{{ m() }}{% endfor %}", "123"],
      ["{% macro m() %}{{ loop.previtem }}{% endmacro %}{% for x in xs %}{{ m() | upper }}{% endfor %}", "AB"],
      ["{% macro m() %}{{ caller() }}{% endmacro %}{% for x in xs %}{% call m() %}{{ loop.index0 }}{% endcall %}{% endfor %}", "012"],
      ["{% for x in xs %}{% set l = loop %}{{ l.length }}{% endfor %}", "333"],
      ["{% for x in xs %}{{ x }}{% endfor %}{{ loop is defined }}", "abcFalse"],
    ];
    for (const [src, want] of cases) expect(render(src), src).toBe(want);
  });

  it("is a new object each iteration wherever the body could keep or change it", () => {
    const cases: [string, string][] = [
      // kept from the first iteration, read in the later ones
      ["{% set ns = namespace(first=none) %}{% for x in xs %}{% if loop.first %}{% set ns.first = loop %}{% endif %}{{ ns.first.index }}{% endfor %}", "111"],
      // a member set on it does not carry to the next iteration
      ["{% for x in xs %}{{ loop.y is defined }}{% set loop.y = 1 %}{% endfor %}", "FalseFalseFalse"],
      // kept by a macro the body calls
      ["{% set ns = namespace(l=none) %}{% macro keep() %}{% if ns.l is none %}{% set ns.l = loop %}{% endif %}{% endmacro %}{% for x in xs %}{{ keep() }}{{ ns.l.index }}{% endfor %}", "111"],
      // passed on whole
      ["{% macro idx(l) %}{{ l.index }}{% endmacro %}{% for x in xs %}{{ idx(loop) }}{% endfor %}", "123"],
      ["{% set ns = namespace(all=[]) %}{% for x in xs %}{% set ns.all = ns.all + [loop] %}{% endfor %}{% for l in ns.all %}{{ l.index }}{% endfor %}", "123"],
      // members only: one object, updated
      ["{% for x in xs %}{{ loop.index }}{{ loop['revindex'] }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.first }}{% endfor %}", "13bTrue22acFalse31bFalse"],
    ];
    for (const [src, want] of cases) expect(render(src), src).toBe(want);
  });

  it("costs the same budget whether it is built or not", () => {
    const usage = (src: string): TemplateUsage => {
      let u: TemplateUsage | undefined;
      renderTemplate(src, { xs }, { onUsage: (x) => (u = x) });
      return u!;
    };
    // a macro that names `loop` makes every loop that calls anything build its object: the
    // same render then, but for the macro statement itself (one step)
    const skipped = usage("{% for x in xs %}{{ x | upper }}{% endfor %}");
    const built = usage("{% macro m() %}{{ loop }}{% endmacro %}{% for x in xs %}{{ x | upper }}{% endfor %}");
    expect(built.steps - skipped.steps).toBe(1);
    expect(skipped.steps).toBeGreaterThan(9 * xs.length);
    expect(skipped.steps).toBeLessThan(DEFAULT_TEMPLATE_LIMITS.maxSteps);
  });
});
