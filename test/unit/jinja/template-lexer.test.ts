// Our positioned lexer must produce @huggingface/jinja's token list, token for token, and its
// positions must point at the token's text in the source. Over every vendored template and random
// template-like texts (with the whitespace-control and generation-tag corners that preprocessing
// handles).
import fs from "node:fs";
import path from "node:path";

import { tokenize as libraryTokenize } from "@huggingface/jinja";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { tokenize } from "../../../lib/jinja/lexer.js";

const TEMPLATES = path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates");

function library(src: string): [string, string][] | string {
  try {
    return libraryTokenize(src, { lstrip_blocks: true, trim_blocks: true }).map((t: { type: string; value: string }) => [t.type, t.value]);
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

function ours(src: string): [string, string][] | string {
  try {
    return tokenize(src).map((t) => [t.type, t.value]);
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

describe("template lexer", () => {
  const files = fs.readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja"));
  it(`gives the library's tokens for all ${files.length} vendored templates`, () => {
    expect(files.length).toBeGreaterThan(50);
    for (const f of files) {
      const src = fs.readFileSync(path.join(TEMPLATES, f), "utf8").replace(/\r\n?/g, "\n");
      expect(ours(src), f).toEqual(library(src));
    }
  });

  it("positions point at each token's text", () => {
    for (const f of files) {
      const src = fs.readFileSync(path.join(TEMPLATES, f), "utf8").replace(/\r\n?/g, "\n");
      for (const t of tokenize(src)) {
        if (t.type === "Text" || t.type === "Comment" || t.type === "StringLiteral" || t.type === "NumericLiteral") continue;
        const at = src.slice(t.start, t.start + t.value.length + 1);
        // `{%-` / `-%}` carry their modifier; everything else is its own text
        expect(at === t.value || at.startsWith(t.value) || at.startsWith("-" + t.value), `${f} ${t.type} ${t.value} at ${t.start}`).toBe(true);
      }
    }
  });

  const piece = fc.constantFrom(
    "{%", "%}", "{%-", "-%}", "{{", "}}", "{{-", "-}}", "{#", "#}", "{#-", "-#}", "{% generation %}", "{%- endgeneration -%}",
    "{% if x %}", "{% endif %}", " ", "  ", "\t", "\n", "\n\n", "\u00a0", "\u2028", "x", "'s'", '"d\\n"', "'\\x41'", "1", "2.5", "-3",
    "+", "-", "*", "**", "//", "|", ".", ",", ":", "(", ")", "[", "]", "{", "}", "==", "!=", "<=", "~", "=", "text", "-}", "%}\n", "#}\n",
  );
  it("agrees with the library on random template text (errors included)", () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
        const src = parts.join("");
        expect(ours(src)).toEqual(library(src));
      }),
      { seed: 11, numRuns: 3000 },
    );
  });

  it("preprocesses a long run of whitespace without backtracking", () => {
    // the library's generation-tag regex is quadratic here: 1.6 s for 40k spaces, ~40 s for 200k
    const src = "{{ x }}" + " ".repeat(200_000) + "y";
    expect(ours(src)).toEqual([
      ["OpenExpression", "{{"],
      ["Identifier", "x"],
      ["CloseExpression", "}}"],
      ["Text", " ".repeat(200_000) + "y"],
    ]);
  });
});
