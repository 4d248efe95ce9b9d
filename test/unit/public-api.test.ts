/**
 * The public declarations of every package entry point (package.json `exports`), snapshotted, so
 * the surface only changes on purpose: update test/fixtures/public-api.txt with
 * `npx vitest run test/unit/public-api.test.ts -u` and review the diff.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: Record<string, string | { default: string }> };

/** package.json export -> its TypeScript source. */
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === "object")
  .map(([name, target]) => ({ name, file: join(ROOT, (target as { default: string }).default.replace(/^\.\/dist\//, "lib/").replace(/\.js$/, ".ts")) }));

const printer = ts.createPrinter({ removeComments: true });
const FLAGS = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseFullyQualifiedType | ts.TypeFormatFlags.WriteArrowStyleSignature;

function describeSymbol(checker: ts.TypeChecker, exported: ts.Symbol): string {
  const sym = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const decl = sym.declarations?.[0];
  if (decl === undefined) return `${exported.name}: ?`;
  // declarations without comments: documentation may change freely, the shape may not
  const text = (node: ts.Node) => printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile()).replace(/\s+/g, " ");
  if (ts.isClassDeclaration(decl)) {
    const members = decl.members
      .filter((m) => !(ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) && !(m.name !== undefined && ts.isPrivateIdentifier(m.name)))
      .filter((m) => !ts.getJSDocTags(m).some((t) => t.tagName.text === "internal"))
      .map((m) => {
        const isStatic = ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Static ? "static " : "";
        if (ts.isConstructorDeclaration(m)) return `  constructor(${m.parameters.map(text).join(", ")})`;
        const name = m.name === undefined ? "?" : m.name.getText();
        const type = checker.getTypeOfSymbolAtLocation(checker.getSymbolAtLocation(m.name!) ?? sym, m);
        return `  ${isStatic}${name}: ${checker.typeToString(type, m, FLAGS)}`;
      });
    return `class ${exported.name} {\n${members.join("\n")}\n}`;
  }
  if (ts.isTypeAliasDeclaration(decl)) return `type ${exported.name} = ${checker.typeToString(checker.getDeclaredTypeOfSymbol(sym), decl, FLAGS | ts.TypeFormatFlags.InTypeAlias)}`;
  if (ts.isInterfaceDeclaration(decl)) return text(decl).replace(/^export /, "");
  return `${exported.name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(sym, decl), decl, FLAGS)}`;
}

describe("public API", () => {
  it("every entry point's declarations match the snapshot", async () => {
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config, ts.sys, ROOT);
    const program = ts.createProgram(entries.map((e) => e.file), { ...config.options, noEmit: true });
    const checker = program.getTypeChecker();
    const out: string[] = [];
    for (const e of entries) {
      const source = program.getSourceFile(e.file);
      expect(source, e.file).toBeDefined();
      const moduleSymbol = checker.getSymbolAtLocation(source!)!;
      const exported = checker.getExportsOfModule(moduleSymbol).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const values = exported.filter((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s).flags & ts.SymbolFlags.Value);
      out.push(`## ${e.name} (${values.length} values, ${exported.length - values.length} types)`, "");
      for (const s of exported) out.push(describeSymbol(checker, s));
      out.push("");
    }
    await expect(out.join("\n")).toMatchFileSnapshot("../fixtures/public-api.txt");
  }, 60_000);

  it("the root entry stays small", async () => {
    const root = await import("../../lib/index.js");
    // models, contexts and sequences, system info, completions and their targets, templates and plans, the session, errors
    expect(Object.keys(root).length).toBeLessThanOrEqual(20);
  });
});
