// Type-level contract with the official `openai` (Responses) and `@anthropic-ai/sdk` (Messages) packages: test/types/endpoint-packages.ts compiled
// with the project's compiler options (strict) by the TypeScript compiler API; no diagnostics allowed.
import { join } from "node:path";

import ts from "typescript";
import { expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";

it("our Responses response and events, and our Messages message and events, are assignable to the openai / @anthropic-ai/sdk types", () => {
  const configPath = join(packageRoot, "tsconfig.json");
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, packageRoot);
  const file = join(packageRoot, "test", "types", "endpoint-packages.ts");
  const program = ts.createProgram([file], { ...parsed.options, noEmit: true });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
  expect(diagnostics).toEqual([]);
}, 120_000);
