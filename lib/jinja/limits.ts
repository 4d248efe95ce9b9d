/**
 * Render budgets. A chat template comes with the model file or the request and is untrusted code:
 * a render may spend only so much work, build only so long a string and nest only so deep, and
 * the work a builtin is about to do (range(), `*` on strings, replace, join...) is sized and
 * charged before it allocates. Running out is a TemplateLimitError naming the budget; the
 * evaluator attaches the node, the API edge the line and column (ERR_TEMPLATE_LIMIT).
 *
 * Rendering is synchronous and never re-entrant (no template calls another), so the active budget
 * is module state that `withBudget` sets for the duration of one render.
 */
import { ArgumentRangeError, ArgumentTypeError } from "../errors.js";
import { TemplateError, TemplateLimitError } from "./errors.js";

export interface TemplateLimits {
  /**
   * Work units one render may spend: 1 per node evaluated, LOOP_ITERATION_COST per loop
   * iteration, CALL_COST per macro call, 1 per item a builtin walks, 1 per STRING_CHARS_PER_STEP
   * characters of string built. Calibrated so that the default costs about a quarter of a second
   * of CPU at most (scripts/bench-template-limits.mjs). Default 5,000,000.
   */
  maxSteps?: number;
  /** Longest string a render may build, its output included, in UTF-16 code units. Default 16 Mi. */
  maxOutputLength?: number;
  /**
   * Characters a render may build in total, intermediate strings included (concatenations,
   * replace, join, JSON...): the bound on its memory. Default 256 Mi.
   */
  maxAllocation?: number;
  /** Deepest evaluation (expression nesting plus macro recursion) and deepest value walked. Default 400. */
  maxNesting?: number;
  /** Most items one array or object may hold (range(), split(), append, +). Default 1,000,000. */
  maxItems?: number;
}

export type ResolvedLimits = Required<TemplateLimits>;

export const DEFAULT_TEMPLATE_LIMITS: Readonly<ResolvedLimits> = Object.freeze({
  maxSteps: 5_000_000,
  maxOutputLength: 16 * 1024 * 1024,
  maxAllocation: 256 * 1024 * 1024,
  maxNesting: 400,
  maxItems: 1_000_000,
});

/** What one loop iteration costs beyond its body (the `loop` object, the bindings). */
export const LOOP_ITERATION_COST = 16;
/** What one macro or caller() call costs beyond its body (a scope, the parameter bindings). */
export const CALL_COST = 16;
/** Characters of string built or read per work unit (copies run at memory speed, ~1 ns per 10 characters). */
export const STRING_CHARS_PER_STEP = 512;

/**
 * Limits checked when a template is compiled (compile.ts; the parse is cached per source, so
 * these do not vary per render): bracket plus block nesting in the source (the library's parser
 * recurses about 15 frames per bracket level), and the depth of the parsed tree.
 */
export const MAX_SOURCE_NESTING = 100;
export const MAX_TREE_DEPTH = 1000;

/**
 * Longest template source compiled, in UTF-16 code units, checked before the lexer runs: the
 * largest real template (vendor/llama.cpp/models/templates) is 17 KB, this is 15 times that. Lexing
 * and parsing cost ~10 µs per token, so a 2 MB list literal (1e6 items) or a 10 MB template from a
 * GGUF would block for seconds before any render budget applies.
 */
export const MAX_SOURCE_LENGTH = 256 * 1024;

/** Refuses a source over MAX_SOURCE_LENGTH (ERR_TEMPLATE_LIMIT, at once: nothing is scanned). */
export function checkSourceLength(source: string, hash: () => string): void {
  if (source.length > MAX_SOURCE_LENGTH) {
    throw new TemplateError("ERR_TEMPLATE_LIMIT", `the chat template is ${source.length} characters long, over the limit of ${MAX_SOURCE_LENGTH} (the largest real template is about 17,000)`, { hash: hash() });
  }
}

export function resolveLimits(limits: TemplateLimits | undefined): ResolvedLimits {
  if (limits === undefined) return DEFAULT_TEMPLATE_LIMITS;
  if (typeof limits !== "object" || limits === null) throw new ArgumentTypeError("limits must be an object");
  const out = { ...DEFAULT_TEMPLATE_LIMITS };
  for (const key of Object.keys(limits) as (keyof TemplateLimits)[]) {
    if (!Object.hasOwn(DEFAULT_TEMPLATE_LIMITS, key)) throw new ArgumentTypeError(`unknown template limit '${String(key)}'`);
    const v = limits[key];
    if (v === undefined) continue;
    if (typeof v !== "number" || !(v >= 1) || (!Number.isInteger(v) && v !== Infinity))
      throw new ArgumentRangeError(`template limit ${key} must be a positive integer (or Infinity), got ${String(v)}`);
    out[key] = v;
  }
  return out;
}

export class Budget {
  steps: number;
  /** Characters still allowed to be built. */
  allocation: number;
  /** The deepest evaluation seen. */
  peakNesting = 0;
  constructor(readonly limits: ResolvedLimits) {
    this.steps = limits.maxSteps;
    this.allocation = limits.maxAllocation;
  }
  /** What a render used, for callers sizing their limits. */
  usage(): TemplateUsage {
    return {
      steps: Math.ceil(this.limits.maxSteps - this.steps),
      allocated: this.limits.maxAllocation - this.allocation,
      nesting: this.peakNesting,
    };
  }
}

/** The budget one render used. */
export interface TemplateUsage {
  steps: number;
  /** Characters of strings built. */
  allocated: number;
  nesting: number;
}

/** Used outside renders (value helpers called directly): no work limit, but nesting still bounded. */
const UNBOUNDED = new Budget({ ...DEFAULT_TEMPLATE_LIMITS, maxSteps: Infinity, maxOutputLength: 0x1fffffe8, maxAllocation: Infinity, maxItems: Infinity });
let active: Budget = UNBOUNDED;

export function withBudget<T>(budget: Budget, f: () => T): T {
  const prev = active;
  active = budget;
  try {
    return f();
  } finally {
    active = prev;
  }
}

function exhausted(): never {
  throw new TemplateLimitError("steps", `the template ran past its step budget (maxSteps ${active.limits.maxSteps})`);
}

/** Charges `n` work units. */
export function spend(n: number): void {
  if ((active.steps -= n) < 0) exhausted();
}

/** Throws when a string of `length` code units may not exist (no charge: its pieces were charged). */
export function checkLength(length: number): void {
  if (length > active.limits.maxOutputLength) tooLong(length);
}

function tooLong(length: number): never {
  throw new TemplateLimitError(
    "output",
    `the template would build a string of ${length} characters (maxOutputLength ${active.limits.maxOutputLength})`,
  );
}

/** Charges reading (scanning, comparing, flattening) a string of `length` code units. */
export function spendRead(length: number): void {
  if ((active.steps -= 1 + length / STRING_CHARS_PER_STEP) < 0) exhausted();
}

/** Charges building a string of `length` code units, after checking it may exist. */
export function spendString(length: number): void {
  if (length > active.limits.maxOutputLength) tooLong(length);
  if ((active.allocation -= length) < 0) {
    throw new TemplateLimitError("memory", `the template built more than ${active.limits.maxAllocation} characters of strings (maxAllocation)`);
  }
  if ((active.steps -= length / STRING_CHARS_PER_STEP) < 0) exhausted();
}

/** Checks that a collection of `count` items may exist and charges building it. */
export function spendItems(count: number): void {
  if (count > active.limits.maxItems) {
    throw new TemplateLimitError("items", `the template would build a collection of ${count} items (maxItems ${active.limits.maxItems})`);
  }
  if ((active.steps -= count) < 0) exhausted();
}

/** Checks that a collection may grow to `count` items; charges one step (append, set). */
export function checkItems(count: number): void {
  if (count > active.limits.maxItems) {
    throw new TemplateLimitError("items", `the template would build a collection of ${count} items (maxItems ${active.limits.maxItems})`);
  }
  if (--active.steps < 0) exhausted();
}

/** Throws when `depth` is past the nesting limit (value walks: printing, JSON, equality...). */
export function checkDepth(depth: number): void {
  if (depth > active.limits.maxNesting) {
    throw new TemplateLimitError("nesting", `the template nests deeper than ${active.limits.maxNesting} levels (maxNesting)`);
  }
}

/** Where the active budget stands: to record what a computation charges (see chargeAgain). */
export function budgetPoint(): { steps: number; allocation: number; limits: ResolvedLimits } {
  return { steps: active.steps, allocation: active.allocation, limits: active.limits };
}

/**
 * Charges again what a computation charged before under the same limits (`steps` work units,
 * `allocation` characters), when the budget has room for all of it: a deterministic computation
 * that fitted then passes every check it made then. False (nothing charged) otherwise: the
 * caller computes afresh, to fail where it would.
 */
export function chargeAgain(steps: number, allocation: number, limits: ResolvedLimits): boolean {
  if (active.limits !== limits || active.steps - steps < 0 || active.allocation - allocation < 0) return false;
  active.steps -= steps;
  active.allocation -= allocation;
  return true;
}

export function maxItems(): number {
  return active.limits.maxItems;
}

export function maxNesting(): number {
  return active.limits.maxNesting;
}
