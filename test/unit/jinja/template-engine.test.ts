import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { renderTemplate } from "../../../lib/jinja/render.js";

const r = (src: string, vars: Record<string, unknown> = {}): string => renderTemplate(src, vars);

function renderError(src: string, vars: Record<string, unknown> = {}): LlamapegError {
  try {
    r(src, vars);
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
  throw new Error("expected a render error");
}

describe("template engine: printing", () => {
  it("prints booleans Python-style and None as nothing", () => {
    expect(r("{{ true }}|{{ false }}|{{ none }}|{{ x }}", { x: null })).toBe("True|False||");
  });
  it("prints floats with at least one decimal, ints plainly", () => {
    expect(r("{{ 1.0 }} {{ 2.50 }} {{ 3 }} {{ 7 / 2 }}")).toBe("1.0 2.5 3 3.5");
  });
  it("prints lists and dicts as Python's repr, and in reference mode flattens arrays and prints objects as nothing", () => {
    expect(r("[{{ ['a', 1, true] }}][{{ {'k': 1, 'n': none} }}]")).toBe("[['a', 1, True]][{'k': 1, 'n': None}]");
    expect(renderTemplate("[{{ ['a', 1, true] }}][{{ {'k': 1} }}]", {}, { printing: "reference" })).toBe("[a1True][]");
  });
  it("strips one trailing newline and applies trim_blocks/lstrip_blocks", () => {
    expect(r("  {% if true %}\nx\n  {% endif %}\n")).toBe("x\n");
  });
});

describe("template engine: operators", () => {
  it("concatenates None and undefined with strings as empty", () => {
    expect(r("{{ none + 'a' }}{{ 'b' ~ missing }}")).toBe("ab");
  });
  it("iterating undefined yields nothing; member of undefined is undefined", () => {
    expect(r("{% for x in nope %}x{% else %}empty{% endfor %}|{{ nope.a.b is defined }}")).toBe("empty|False");
  });
  it("compares integers and floats numerically and strings by value", () => {
    expect(r("{{ 1 == 1.0 }} {{ 'a' == 'a' }} {{ [1, 2] == [1, 2] }} {{ 1 in [0, 1] }}")).toBe("True True True True");
  });
  it("repeats strings with *", () => {
    expect(r("{{ '-' * 3 }}")).toBe("---");
  });
});

describe("template engine: objects", () => {
  it("accepts integer keys and keeps insertion order", () => {
    expect(r("{% set d = {2: 'b', 1: 'a'} %}{{ d[1] }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}")).toBe("a2=b;1=a;");
  });
  it("prefers builtins for obj.name and keys for obj['name']", () => {
    expect(r("{{ d['items'] }} {{ d.items() | length }}", { d: { items: 5 } })).toBe("5 1");
  });
  it("namespace assignments survive loops", () => {
    expect(r("{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}")).toBe("3");
  });
  it("loop scope does not leak plain sets", () => {
    expect(r("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}")).toBe("1");
  });
});

describe("template engine: filters and methods", () => {
  it("tojson uses ', ' and ': ' separators on one line, and indent puts items on lines", () => {
    expect(r("{{ v | tojson }}", { v: { a: [1, "é"], b: null } })).toBe('{"a": [1, "é"], "b": null}');
    expect(r("{{ v | tojson(indent=2) }}", { v: { a: [1] } })).toBe('{\n  "a": [\n    1\n  ]\n}');
    expect(r("{{ v | tojson(ensure_ascii=true) }}", { v: "é" })).toBe('"\\u00e9"');
  });
  it("string methods", () => {
    expect(r("{{ '  a b  '.strip() }}|{{ 'a,b,c'.split(',') | join('-') }}|{{ 'xxa'.lstrip('x') }}|{{ 'hello world'.title() }}")).toBe(
      "a b|a-b-c|a|Hello World",
    );
    expect(r("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'a-b'.replace('-', '+') }} {{ '{} {}'.format(1, 'x') }}")).toBe(
      "True True a+b 1 x",
    );
  });
  it("string/int/float filters and min/max", () => {
    expect(r("{{ 5 | string }} {{ true | string }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ '42' | int + 1 }}")).toBe("5 True 1 3 43");
  });
  it("selectattr, map and default", () => {
    const msgs = [
      { role: "system", content: "s" },
      { role: "user", content: "u" },
    ];
    expect(r("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}", { msgs })).toBe("u");
    expect(r("{{ missing | default('d') }} {{ none | default('n') }} {{ '' | default('e', true) }}")).toBe("d n e");
  });
  it("slices arrays and strings", () => {
    expect(r("{{ [1, 2, 3, 4][1:3] | join(',') }} {{ 'abcdef'[::-1] }} {{ [1, 2, 3][-1] }}")).toBe("2,3 fedcba 3");
  });
  it("macros with defaults and keyword arguments", () => {
    expect(r("{% macro m(a, b='x') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 2) }} {{ m(a=3, b=4) }}")).toBe("1x 12 34");
  });
});

describe("template engine: errors", () => {
  it("raise_exception becomes ERR_TEMPLATE_RENDER carrying the template's message", () => {
    const e = renderError("{{ raise_exception('System role not supported') }}");
    expect(e.code).toBe("ERR_TEMPLATE_RENDER");
    expect(e.message).toContain("System role not supported");
    expect(e.where).toMatch(/^template [0-9a-f]{12} line 1, column 4$/);
  });
  it("a syntax error is ERR_TEMPLATE_RENDER", () => {
    const e = renderError("{% if %}");
    expect(e.code).toBe("ERR_TEMPLATE_RENDER");
    expect(e.message).toContain("syntax error");
  });
  it("unknown filters and bad operands fail as ERR_TEMPLATE_RENDER", () => {
    expect(renderError("{{ 'a' | nosuchfilter }}").message).toContain("nosuchfilter");
    expect(renderError("{{ 1 - 'a' }}").code).toBe("ERR_TEMPLATE_RENDER");
  });
});

describe("template engine: strftime_now", () => {
  it("formats the given time in local time", () => {
    const now = new Date(2024, 6, 4, 9, 5, 3);
    expect(renderTemplate("{{ strftime_now('%Y-%m-%d %H:%M:%S %b %B %a %A') }}", {}, { now })).toBe(
      "2024-07-04 09:05:03 Jul July Thu Thursday",
    );
  });
});

describe("template engine: error positions", () => {
  it("names the failing expression and its line and column", () => {
    const e = renderError("line one\n{% for m in messages %}\n  {{ m.content | nosuch }}\n{% endfor %}", { messages: [{ content: "a" }] });
    expect(e.message).toContain("`m.content | nosuch` at line 3, column 18");
    expect(e.where).toMatch(/^template [0-9a-f]{12} line 3, column 18$/);
  });
  it("finds the raise_exception call that fired, by its message", () => {
    const e = renderError("{% if a %}{{ raise_exception('first') }}{% else %}{{ raise_exception('second: ' + b) }}{% endif %}", { a: false, b: "x" });
    expect(e.message).toContain("Jinja Exception: second: x");
    expect(e.message).toContain("at line 1, column 54");
  });
});

describe("template engine: syntax error positions", () => {
  it("points at the token where parsing stopped", () => {
    const e = renderError("ok\n{% if x == %}a{% endif %}");
    expect(e.where).toMatch(/line 2, column 12$/);
    expect(e.message).toContain("at line 2, column 12");
    expect(e.message).toContain("{% if x == %}");
    expect(renderError("a {{ 'x' | }} b").where).toMatch(/line 1, column 12$/);
  });
  it("says a block was left open", () => {
    expect(renderError("{% if x %}no end").message).toContain("block left open");
  });
});

describe("template engine: variables", () => {
  it("rejects variables that are not data, naming them", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [{ f: () => 1 }, { c: cyclic }]) {
      try {
        r("{{ 1 }}", bad);
        expect.unreachable();
      } catch (e) {
        expect((e as LlamapegError).code).toBe("ERR_INVALID_ARGUMENT");
        expect((e as LlamapegError).where).toMatch(/^variables\.(f|c)$/);
      }
    }
  });
  it("deep macro recursion is a nesting limit error, not a crash", () => {
    const e = renderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    expect(e.code).toBe("ERR_TEMPLATE_LIMIT");
    expect(e.message).toContain("maxNesting");
  });
});
