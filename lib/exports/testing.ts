/**
 * `llamapeg/testing`: the tiny random-weight test models the project writes itself (a real
 * tokenizer and chat template, random weights: under a grammar every output is valid, which is
 * what the tests prove), and a small JSON Schema checker to score outputs.
 */
export { ensureTestModel, writeTestModel, TEST_MODEL_PRESETS, type TestModelOptions, type TestModelSize } from "../test-model/index.js";
export { validateJson } from "../openai/json-validate.js";
