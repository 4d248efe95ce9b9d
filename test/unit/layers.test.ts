/**
 * The layers of lib/: each area (a folder of lib/, or a file at its top) imports only from areas
 * below it in `LAYERS` (type-only imports and re-exports included). The Jinja engine (lib/jinja)
 * stands alone: besides itself, only the error classes, `lineColumn` and the cache registry.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const LIB = resolve(import.meta.dirname, "../../lib");

/** Lowest first: an area may import itself and the areas before it. */
const LAYERS = [
  "errors",
  "paths",
  "line-column",
  "json-syntax",
  "cache",
  "gbnf",
  "gguf",
  "native",
  "json-schema",
  "peg",
  "jinja",
  "test-model",
  "llama",
  "chat",
  "openai",
  "anthropic",
  "remote",
  "server",
  "ai-sdk",
  "cli",
  "exports",
  "index",
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

const areaOf = (file: string): string => {
  const parts = relative(LIB, file).split("/");
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, "") : parts[0]!;
};

interface Import {
  from: string;
  to: string;
}

/** Every relative import of lib/ (static, dynamic, `export ... from`, type-only). */
function imports(): Import[] {
  return files(LIB).flatMap((file) =>
    ts
      .preProcessFile(readFileSync(file, "utf8"), true, true)
      .importedFiles.map((f) => f.fileName)
      .filter((spec) => spec.startsWith("."))
      .map((spec) => ({ from: file, to: resolve(dirname(file), spec).replace(/\.js$/, ".ts") })),
  );
}

describe("layers of lib/", () => {
  const all = imports();

  it("finds the imports it checks", () => {
    // a reader that found nothing would pass every check below
    expect(all.length).toBeGreaterThan(500);
    expect(all.some((i) => areaOf(i.from) === "chat" && areaOf(i.to) === "jinja")).toBe(true);
    expect(new Set(files(LIB).map(areaOf))).toEqual(new Set(LAYERS));
  });

  it("no module imports from a layer above it", () => {
    const upward = all
      .filter((i) => LAYERS.indexOf(areaOf(i.to)) > LAYERS.indexOf(areaOf(i.from)))
      .map((i) => `${relative(LIB, i.from)} -> ${relative(LIB, i.to)}`);
    expect(upward).toEqual([]);
  });

  it("lib/jinja imports nothing of lib/ but itself, the error classes, lineColumn and the cache registry", () => {
    const outside = all
      .filter((i) => areaOf(i.from) === "jinja" && !["jinja", "errors", "line-column", "cache"].includes(areaOf(i.to)))
      .map((i) => `${relative(LIB, i.from)} -> ${relative(LIB, i.to)}`);
    expect(outside).toEqual([]);
  });
});
