/** A TypeScript pre-check of GBNF grammars against what llama.cpp's grammar parser and sampler accept. */
export { checkGbnf, MAX_CHAIN, MAX_ELEMENTS, MAX_FANOUT, MAX_NESTING, type CheckGbnfOptions, type GbnfStats } from "./check.js";
export { MAX_REPETITION } from "./parse.js";
