// A Node module hook that lets fuzz children import the TypeScript sources directly (the repo
// imports `./x.js` for `./x.ts`): .ts files are transpiled with the project's TypeScript, one
// file at a time, no type checking. Used as `node --import ./test/fuzz/ts-register.mjs ...`.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

export async function resolve(specifier, context, next) {
  if (specifier.endsWith(".js") && (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("file:")) && context.parentURL?.startsWith("file:")) {
    const url = new URL(specifier.replace(/\.js$/, ".ts"), context.parentURL);
    if (existsSync(fileURLToPath(url)) && !existsSync(fileURLToPath(new URL(specifier, context.parentURL)))) return { url: url.href, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.endsWith(".ts")) return next(url, context);
  const source = readFileSync(fileURLToPath(url), "utf8");
  const out = ts.transpileModule(source, {
    fileName: fileURLToPath(url),
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false, verbatimModuleSyntax: false, isolatedModules: true },
  });
  return { format: "module", source: out.outputText, shortCircuit: true };
}

export const loaderUrl = pathToFileURL(fileURLToPath(import.meta.url)).href;
