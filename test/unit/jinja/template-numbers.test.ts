// Floats print as Python's Jinja prints them (repr / json.dumps) by default, and as llama.cpp's
// engine (%f trimmed, %g in JSON) with printing: "reference". Expected strings are CPython 3's
// repr() / json.dumps() of the same doubles.
import { describe, expect, it } from "vitest";

import { renderTemplate } from "../../../lib/jinja/index.js";
import { pythonFloatRepr, pythonStrRepr } from "../../../lib/jinja/value.js";

const PYTHON: [number, string][] = [
  [1e-9, "1e-09"],
  [-118.2437, "-118.2437"],
  [2.5, "2.5"],
  [1e16, "1e+16"],
  [1e15, "1000000000000000.0"],
  [0.0001, "0.0001"],
  [0.00001, "1e-05"],
  [1.5e300, "1.5e+300"],
  [-0, "-0.0"],
  [0.1 + 0.2, "0.30000000000000004"],
  [123456.789, "123456.789"],
  [6.02214076e23, "6.02214076e+23"],
  [1.256e-6, "1.256e-06"],
  [5e-324, "5e-324"],
  [1.7976931348623157e308, "1.7976931348623157e+308"],
  [12345678901234567, "1.2345678901234568e+16"],
];

describe("float printing", () => {
  it.each(PYTHON)("repr(%d) is %s", (x, s) => {
    expect(pythonFloatRepr(x)).toBe(s);
  });

  it("prints floats as Python by default and as llama.cpp in reference mode", () => {
    const src = "{{ x }}|{{ x | string }}|{{ x | tojson }}|{{ [x] | tojson }}";
    const vars = { x: -118.2437 };
    expect(renderTemplate(src, vars)).toBe("-118.2437|-118.2437|-118.2437|[-118.2437]");
    expect(renderTemplate(src, vars, { printing: "reference" })).toBe("-118.2437|-118.244|-118.244|[-118.244]");
    expect(renderTemplate("{{ x }} {{ x | tojson }}", { x: 1e-9 })).toBe("1e-09 1e-09");
    expect(renderTemplate("{{ x }} {{ x | tojson }}", { x: 1e-9 }, { printing: "reference" })).toBe("0.0 1e-09");
  });

  it("keeps the two styles apart in the tojson memo", () => {
    const vars = { v: [0.123456789] };
    expect(renderTemplate("{{ v | tojson }}", vars, { printing: "reference" })).toBe("[0.123457]");
    expect(renderTemplate("{{ v | tojson }}", vars)).toBe("[0.123456789]");
  });
});

describe("string repr inside containers", () => {
  it.each([
    ["a'b", `"a'b"`],
    ['a"b', `'a"b'`],
    [`a'b"c`, `'a\\'b"c'`],
    ["x\ny\t\\", "'x\\ny\\t\\\\'"],
    ["café\x07", "'café\\x07'"],
  ])("repr(%j) is %s", (s, r) => {
    expect(pythonStrRepr(s)).toBe(r);
  });

  it("prints a list of strings as Python does by default and as llama.cpp in reference mode", () => {
    const vars = { v: ["line one\nline two", "O'Brien"] };
    expect(renderTemplate("{{ v | string }}", vars)).toBe(`['line one\\nline two', "O'Brien"]`);
    expect(renderTemplate("{{ v | string }}", vars, { printing: "reference" })).toBe(`['line one\nline two', "O'Brien"]`);
  });
});
