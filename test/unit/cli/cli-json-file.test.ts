// `--tools FILE` and other JSON files on the command line: a syntax error is reported at the same
// offset V8 reports (where V8 gives one), as file:line:column.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { readJsonFile } from "../../../lib/cli/json-file.js";
import { findJsonSyntaxError, lineColumn } from "../../../lib/json-syntax.js";
import { readToolsFile } from "../../../lib/cli/tools-file.js";
import { LlamapegError } from "../../../lib/errors.js";

function v8Offset(text: string): number | null | "valid" {
  try {
    JSON.parse(text);
    return "valid";
  } catch (e) {
    const m = /at position (\d+)/.exec((e as Error).message);
    if (m) return Number(m[1]);
    return /Unexpected end of JSON input/.test((e as Error).message) ? text.length : null;
  }
}

describe("findJsonSyntaxError", () => {
  it.each([
    ['[{"a":1,}]', 8],
    ['[{"a" 1}]', 6],
    ["[1,2", 4],
    ["", 0],
    ["[1]x", 3],
    ['{"a":"b\\u12"}', 11],
    ["01", 1],
    ["-", 1],
    ["1.", 2],
    ['"a\nb"', 2],
  ])("%j: offset %i", (text, offset) => {
    expect(findJsonSyntaxError(text)?.offset).toBe(offset);
  });

  it("agrees with JSON.parse on validity, and with V8's offset wherever V8 reports one (mutated JSON)", () => {
    const mutated = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom("", ",", "}", "]", "{", "[", '"', ":", "x", "\\", "-", "0", " ", "\n"), fc.boolean())
      .map(([json, at, ch, replace]) => {
        const i = json.length === 0 ? 0 : at % (json.length + 1);
        return json.slice(0, i) + ch + json.slice(replace ? i + 1 : i);
      });
    fc.assert(
      fc.property(mutated, (text) => {
        const ours = findJsonSyntaxError(text);
        const theirs = v8Offset(text);
        if (theirs === "valid") return ours === null;
        if (ours === null) return false;
        return theirs === null || theirs === ours.offset;
      }),
      { numRuns: 3000 },
    );
  });

  it("lineColumn counts from 1", () => {
    expect(lineColumn("ab\ncd", 4)).toEqual({ line: 2, column: 2 });
    expect(lineColumn("x", 0)).toEqual({ line: 1, column: 1 });
  });
});

describe("--tools FILE", () => {
  const dir = mkdtempSync(join(tmpdir(), "llamapeg-tools-"));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const message = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(LlamapegError);
      expect((e as LlamapegError).code).toBe("ERR_INVALID_ARGUMENT");
      return (e as Error).message;
    }
    throw new Error("expected an error");
  };

  it("a syntax error: one line with file:line:column", () => {
    const p = file("syntax.json", '[\n  {"type": "function", "function": {"name": "a",}}\n]');
    const m = message(() => readToolsFile(p));
    expect(m).toBe(`--tools ${p}:2:49: expected a double-quoted property name`);
    expect(m).not.toContain("\n");
  });

  it("a bad tool: the file and the path inside it", () => {
    const p = file("shape.json", '[{"type": "function", "function": {"name": "ok"}}, {"type": "function", "function": {"name": "not ok"}}]');
    expect(message(() => readToolsFile(p))).toMatch(new RegExp(`^--tools ${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: \\[1\\]\\.function\\.name: expected 1-64 characters`));
    expect(message(() => readToolsFile(file("obj.json", "{}")))).toMatch(/expected a JSON array of tools$/);
  });

  it("a missing file; 'none' is no tools; a good file", () => {
    expect(message(() => readJsonFile(join(dir, "missing.json"), "tools"))).toBe(`--tools ${join(dir, "missing.json")}: no such file`);
    expect(readToolsFile("none")).toEqual([]);
    const p = file("good.json", JSON.stringify([{ type: "function", function: { name: "f", parameters: { type: "object" } } }]));
    expect(readToolsFile(p).map((t) => t.function.name)).toEqual(["f"]);
  });
});
