// Every node of every vendored template gets a source position, leaves point at their own text,
// and every kind of template error carries a line and column.
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { compileTemplate } from "../../../lib/jinja/compile.js";
import type { TemplateError } from "../../../lib/jinja/errors.js";
import { renderTemplate } from "../../../lib/jinja/index.js";

const TEMPLATES = path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates");

/** Every AST node under `root` (objects with a string `type` that are not operator tokens). */
function nodes(root: object): { type: string; value?: unknown }[] {
  const out: { type: string; value?: unknown }[] = [];
  const stack: unknown[] = [root];
  const seen = new Set<unknown>();
  while (stack.length > 0) {
    const n = stack.pop();
    if (typeof n !== "object" || n === null || seen.has(n)) continue;
    seen.add(n);
    if (n instanceof Map) {
      for (const [k, v] of n) stack.push(k, v);
      continue;
    }
    if (Array.isArray(n)) {
      stack.push(...n);
      continue;
    }
    const rec = n as Record<string, unknown>;
    if (typeof rec.type === "string" && !("index" in rec) && rec.constructor?.name !== "Token") out.push(rec as { type: string });
    for (const [k, v] of Object.entries(rec)) if (k !== "operator") stack.push(v);
  }
  return out;
}

describe("template positions", () => {
  it("every node of every vendored template has a position; leaves point at their text", () => {
    let total = 0;
    const wrong: string[] = [];
    for (const f of fs.readdirSync(TEMPLATES).filter((x) => x.endsWith(".jinja"))) {
      const c = compileTemplate(fs.readFileSync(path.join(TEMPLATES, f), "utf8"));
      for (const n of nodes(c.program)) {
        const at = c.positions.get(n);
        if (at === undefined) wrong.push(`${f}: ${n.type} ${JSON.stringify(n.value)?.slice(0, 40)} has no position`);
        else if (n.type === "Identifier" && !c.source.startsWith(n.value as string, at)) wrong.push(`${f}: ${n.value} at ${at}`);
        total++;
      }
    }
    expect(wrong).toEqual([]);
    expect(total).toBeGreaterThan(30_000);
  });

  const errors: [string, string, string][] = [
    ["lexer: an unexpected character", "ok\n{{ a ; b }}", "line 2, column 6"],
    ["lexer: an unterminated comment", "a\n  {# never closed", "line 2, column 3"],
    ["lexer: a bad escape", "{{ 'a\\qb' }}", "line 1, column 6"],
    ["parser: a missing operand", "ok\n{% if x == %}a{% endif %}", "line 2, column 12"],
    ["parser: an unknown statement", "x{% frobnicate %}", "line 1, column 5"],
    ["parser: a block left open", "{% if x %}\nno end", "line 2, column 7"],
    ["runtime: an unknown filter", "{{ 'a' | nosuch }}", "line 1, column 10"],
    ["runtime: a bad operand", "\n\n  {{ 1 - 'a' }}", "line 3, column 8"],
    ["runtime: raise_exception", "{% if true %}{{ raise_exception('no') }}{% endif %}", "line 1, column 17"],
    ["runtime: calling a non-function", "{{ x() }}", "line 1, column 4"],
    ["runtime: unpacking", "{% for a, b in [1] %}{% endfor %}", "line 1, column 4"],
    ["limit: steps", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "line 1, column "],
  ];
  for (const [name, src, where] of errors) {
    it(`${name}: ${where}`, () => {
      let e: TemplateError | undefined;
      try {
        renderTemplate(src, {});
      } catch (err) {
        e = err as TemplateError;
      }
      expect(e?.code, e?.message).toMatch(/^ERR_TEMPLATE_(RENDER|LIMIT)$/);
      expect(e!.where).toContain(where);
      expect(e!.message).toContain(where);
      expect(e!.line).toBeGreaterThan(0);
      expect(e!.column).toBeGreaterThan(0);
    });
  }
});
