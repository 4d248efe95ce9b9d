/**
 * The model tests' setup: the generated tiny test model (lib/test-model, written to the cache on
 * first use) in the few variants the tests load, and loaded in one call.
 *
 *   model = await loadTestModel();                    // qwen2, in beforeAll
 *   reranker = await loadTestModel("reranker");
 *   afterAll(() => model?.dispose());                 // each file disposes what it loaded
 */
import { loadModel, type LoadModelOptions, type Model } from "../../lib/llama/index.js";
import { ensureTestModel, type EnsureTestModelOptions, type TestModelOptions } from "../../lib/test-model/index.js";

/** The variants of the tiny preset: a transformer, a hybrid, a sliding-window model, a reranker,
 * the hybrid with a sentence-transformers dense layer (embeddings). */
export const TEST_MODEL_VARIANTS = {
  qwen2: {},
  lfm2: { architecture: "lfm2" },
  gemma3: { architecture: "gemma3", slidingWindow: 32 },
  reranker: { architecture: "qwen3", reranker: true },
  lfm2Dense: { architecture: "lfm2", denseOut: true },
} as const satisfies Record<string, Partial<TestModelOptions>>;

export type TestModelVariant = keyof typeof TEST_MODEL_VARIANTS;

/** A variant, or the options of `ensureTestModel("tiny", options)` for a one-off model. */
export type TestModelSpec = TestModelVariant | EnsureTestModelOptions;

/** The path of the tiny test model (`ensureTestModel("tiny", ...)`), written first when missing. */
export function testModelPath(spec: TestModelSpec = "qwen2"): Promise<string> {
  return ensureTestModel("tiny", typeof spec === "string" ? { overrides: TEST_MODEL_VARIANTS[spec] } : spec);
}

/** Loads the tiny test model; the caller disposes it. */
export async function loadTestModel(spec: TestModelSpec = "qwen2", options?: LoadModelOptions): Promise<Model> {
  return loadModel(await testModelPath(spec), options);
}
