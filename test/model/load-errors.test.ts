// Every way loading can fail is a LlamapegError with a code, and the process stays alive.
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel } from "../../lib/llama/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { codeOf } from "./helpers.js";

const vocabFile = join(import.meta.dirname, "..", "..", "vendor", "llama.cpp", "models", "ggml-vocab-qwen2.gguf");
let dir: string;
let tiny: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "llamapeg-load-"));
  tiny = await ensureTestModel("tiny");
});

afterAll(() => {
  // Temp files are small; the OS cleans tmp. Nothing to dispose.
});

describe("loadModel errors", () => {
  it("missing file: ERR_MODEL_NOT_FOUND", async () => {
    const error = await codeOf(() => loadModel(join(dir, "nope.gguf")));
    expect(error.code).toBe("ERR_MODEL_NOT_FOUND");
    expect(error.message).toContain("nope.gguf");
  });

  it("a directory: ERR_MODEL_NOT_FOUND", async () => {
    const error = await codeOf(() => loadModel(dir));
    expect(error.code).toBe("ERR_MODEL_NOT_FOUND");
  });

  it("not a GGUF: ERR_MODEL_NOT_GGUF", async () => {
    const file = join(dir, "text.gguf");
    writeFileSync(file, "this is not a model\n");
    const error = await codeOf(() => loadModel(file));
    expect(error.code).toBe("ERR_MODEL_NOT_GGUF");
  });

  it("empty file: ERR_MODEL_NOT_GGUF", async () => {
    const file = join(dir, "empty.gguf");
    writeFileSync(file, "");
    expect((await codeOf(() => loadModel(file))).code).toBe("ERR_MODEL_NOT_GGUF");
  });

  it("header cut short: ERR_MODEL_CORRUPT", async () => {
    const file = join(dir, "short-header.gguf");
    writeFileSync(file, readFileSync(vocabFile).subarray(0, 4096));
    const error = await codeOf(() => loadModel(file, { vocabOnly: true }));
    expect(error.code).toBe("ERR_MODEL_CORRUPT");
  });

  it("tensor data cut short: ERR_MODEL_CORRUPT", async () => {
    const bytes = readFileSync(tiny);
    const file = join(dir, "truncated.gguf");
    writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length * 0.9)));
    const error = await codeOf(() => loadModel(file));
    expect(error.code).toBe("ERR_MODEL_CORRUPT");
    expect(error.message).toContain("truncated");
  });

  it("unknown architecture: ERR_MODEL_UNSUPPORTED", async () => {
    // Rename the value of general.architecture in place ("qwen2" -> "qwenx", same length).
    const bytes = Buffer.from(readFileSync(tiny));
    const key = Buffer.from("general.architecture");
    const at = bytes.indexOf(key);
    expect(at).toBeGreaterThan(0);
    const valueAt = at + key.length + 4 /* type */ + 8; /* string length */
    expect(bytes.subarray(valueAt, valueAt + 5).toString()).toBe("qwen2");
    bytes.write("qwenx", valueAt);
    const file = join(dir, "unknown-arch.gguf");
    writeFileSync(file, bytes);
    const error = await codeOf(() => loadModel(file));
    expect(error.code).toBe("ERR_MODEL_UNSUPPORTED");
    expect(error.message).toContain("qwenx");
  });

  it("the addon still works after all of the above", async () => {
    const copy = join(dir, "copy.gguf");
    copyFileSync(vocabFile, copy);
    const model = await loadModel(copy, { vocabOnly: true });
    expect(model.tokenize("hello").length).toBeGreaterThan(0);
    model.dispose();
  });
});

describe("use after dispose", () => {
  it("model methods throw ERR_DISPOSED; dispose twice is harmless", async () => {
    const model = await loadModel(vocabFile, { vocabOnly: true });
    model.dispose();
    model.dispose();
    expect(model.disposed).toBe(true);
    expect((await codeOf(() => model.tokenize("x"))).code).toBe("ERR_DISPOSED");
    expect((await codeOf(() => model.detokenize([1]))).code).toBe("ERR_DISPOSED");
    expect((await codeOf(() => model.metadata)).code).toBe("ERR_DISPOSED");
    expect((await codeOf(() => model.createContext())).code).toBe("ERR_DISPOSED");
  });

  it("a vocab-only model has no contexts: ERR_CONTEXT_CREATE", async () => {
    const model = await loadModel(vocabFile, { vocabOnly: true });
    expect((await codeOf(() => model.createContext())).code).toBe("ERR_CONTEXT_CREATE");
    model.dispose();
  });
});
