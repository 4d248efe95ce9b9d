/**
 * The `reasoningBudget` option of `context.generate()`: at most `tokens` tokens inside a reasoning
 * block, then the block is closed for the model (an optional message and the first end marker,
 * forced and decoded in one batch) and it answers. The native side is native/reasoning-budget.h;
 * llama.cpp's counterpart is `--reasoning-budget N` with `--reasoning-budget-message`
 * (common/reasoning-budget.cpp), which llama.cpp applies only as -1 (unlimited) or 0 in its server.
 */
import { ArgumentTypeError, LlamapegError } from "../errors.js";
import type { NativeGenerateOptions } from "../native/binding.js";
import type { Model } from "./model.js";
import { bool, checkKeys, int, str, stringList } from "./validate.js";

export interface ReasoningBudgetOptions {
  /**
   * Most tokens inside one reasoning block (markers not counted); 0 closes it at once. `Infinity`:
   * no bound, the block's tokens are only counted (`stats.reasoningTokens`). A token that ends
   * inside a UTF-8 character is followed by the tokens that complete it before the forced text
   * (as llama.cpp), so a block may hold a few tokens more than `tokens`.
   */
  tokens: number;
  /** The text that opens a block (e.g. `<think>`). */
  start: string;
  /** Texts that close one; the first is the one forced. At least one. */
  end: string[];
  /** Text forced before the end marker when the budget is spent (e.g. "Time to answer."). Default "". */
  message?: string;
  /** The prompt already ends inside a block (a template that opens `<think>` for the model). Default false. */
  open?: boolean;
}

const keys = ["tokens", "start", "end", "message", "open"] as const;

/** What the native side takes for "no bound": a budget no generation reaches (2^31 - 1). */
const UNBOUNDED = 0x7fffffff;

/** Validates `reasoningBudget` (undefined or null: off) and tokenizes its markers. */
export function resolveReasoningBudget(model: Model, value: unknown): NativeGenerateOptions["reasoningBudget"] {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new ArgumentTypeError("reasoningBudget must be {tokens, start, end}", "reasoningBudget");
  const o = value as Record<string, unknown>;
  checkKeys(o, keys, "reasoningBudget");
  if (o.tokens === undefined) throw new ArgumentTypeError("reasoningBudget.tokens is required", "reasoningBudget.tokens");
  const tokens = o.tokens === Infinity ? UNBOUNDED : int(o.tokens, "reasoningBudget.tokens", 0, 0, UNBOUNDED - 1);
  const start = str(o.start, "reasoningBudget.start");
  const end = stringList(o.end, "reasoningBudget.end");
  if (end.length === 0 || end.some((e) => e === "")) throw new ArgumentTypeError("reasoningBudget.end must hold at least one non-empty text", "reasoningBudget.end");
  const message = o.message === undefined ? "" : str(o.message, "reasoningBudget.message");
  const open = bool(o.open, "reasoningBudget.open", false);
  const ids = (text: string, where: string): Int32Array => {
    const t = model.tokenize(text, { addSpecial: false, parseSpecial: true });
    if (t.length === 0) throw new LlamapegError("ERR_INVALID_ARGUMENT", `${where} = ${JSON.stringify(text)} is no tokens in this vocabulary`, { where });
    return Int32Array.from(t);
  };
  return {
    tokens,
    start: start === "" ? [] : [ids(start, "reasoningBudget.start")],
    end: end.map((e, i) => ids(e, `reasoningBudget.end[${i}]`)),
    forced: ids(message + end[0]!, "reasoningBudget.end[0]"),
    open,
  };
}

/**
 * Whether a generation prompt leaves the model inside a reasoning block: its last start marker
 * comes after every end marker (e.g. a template that ends the prompt with `<think>\n`).
 */
export function promptOpensReasoning(generationPrompt: string, start: string, ends: readonly string[]): boolean {
  if (start === "") return false;
  const at = generationPrompt.lastIndexOf(start);
  if (at < 0) return false;
  return ends.every((e) => e === "" || generationPrompt.lastIndexOf(e) < at);
}
