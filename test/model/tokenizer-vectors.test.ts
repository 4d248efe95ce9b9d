// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf{,.inp,.out}), checked case by case
// through Model.tokenize with the same flags as llama.cpp's tests/test-tokenizer-0
// (addSpecial = false, parseSpecial = false).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

import { loadModel } from "../../lib/llama/index.js";
import { FULL, vocabInRun } from "../support/full.js";

const modelsDir = join(import.meta.dirname, "..", "..", "vendor", "llama.cpp", "models");
const vocabs = readdirSync(modelsDir)
  .filter((f) => /^ggml-vocab-.*\.gguf$/.test(f))
  .filter((f) => existsSync(join(modelsDir, `${f}.inp`)) && existsSync(join(modelsDir, `${f}.out`)))
  .filter(vocabInRun) // all of them with LLAMAPEG_FULL=1
  .sort();

interface Case {
  input: string;
  expected: number[];
}

// .inp: cases separated by "\n__ggml_vocab_test__\n"; .out: one line of space-separated ids per case.
function readCases(file: string): Case[] {
  const inputs = readFileSync(`${file}.inp`, "utf8").split("\n__ggml_vocab_test__\n");
  if (inputs.at(-1) === "") inputs.pop();
  const outputs = readFileSync(`${file}.out`, "utf8").split("\n");
  if (outputs.at(-1) === "") outputs.pop();
  expect(outputs.length).toBe(inputs.length);
  return inputs.map((input, i) => {
    const line = outputs[i]!.trim();
    return { input, expected: line === "" ? [] : line.split(" ").map(Number) };
  });
}

describe("tokenizer vectors", () => {
  it("finds the vendored vocabularies", () => {
    expect(vocabs.length).toBeGreaterThanOrEqual(FULL ? 10 : 6);
  });

  for (const vocab of vocabs) {
    it(vocab, async () => {
      const file = join(modelsDir, vocab);
      const cases = readCases(file);
      expect(cases.length).toBeGreaterThan(0);
      const model = await loadModel(file, { vocabOnly: true });
      try {
        const failures: string[] = [];
        for (const c of cases) {
          const got = Array.from(model.tokenize(c.input, { addSpecial: false, parseSpecial: false }));
          if (got.join(" ") !== c.expected.join(" ")) {
            failures.push(`${JSON.stringify(c.input)}: expected [${c.expected.join(" ")}], got [${got.join(" ")}]`);
          }
        }
        expect(failures).toEqual([]);
      } finally {
        model.dispose();
      }
    });
  }
});
