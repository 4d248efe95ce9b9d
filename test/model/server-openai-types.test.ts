// Type-level contract with the official `openai` package: test/types/openai-package.ts compiled
// with the project's compiler options (strict) by the TypeScript compiler API; no diagnostics allowed.
import { join } from "node:path";

import ts from "typescript";
import { expect, it } from "vitest";

import { packageRoot } from "../../lib/native/binding.js";

it("our request accepts ChatCompletionCreateParams; our ChatCompletion / chunk / message are assignable to the package's", () => {
  const configPath = join(packageRoot, "tsconfig.json");
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, packageRoot);
  const file = join(packageRoot, "test", "types", "openai-package.ts");
  const program = ts.createProgram([file], { ...parsed.options, noEmit: true });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
  expect(diagnostics).toEqual([]);
}, 120_000);
