/**
 * Raw rendering: a template source plus a variables object -> text. No chat-specific
 * preprocessing here (lib/chat/apply/template-input.ts prepares a chat request's variables).
 * Every render runs under budgets (limits.ts); every failure names its line and column.
 */
import { LlamapegError } from "../errors.js";
import { type CompiledTemplate, compileTemplate, where } from "./compile.js";
import { TemplateError, TemplateLimitError } from "./errors.js";
import { lineColumn } from "../line-column.js";
import { Evaluator, Scope, failedNodes } from "./interpreter.js";
import { Budget, type TemplateLimits, type TemplateUsage, resolveLimits } from "./limits.js";
import { snippet } from "./describe.js";
import { convertReusable } from "./reuse.js";
import type { Marks } from "./marks.js";
import { type JValue, type PrintStyle, TemplateRaisedError, bool, fromJS, none, withPrintStyle } from "./value.js";

export interface RenderOptions {
  /** What `strftime_now` formats (local time). Default: the current time. */
  now?: Date;
  /** Budgets for this render (defaults: DEFAULT_TEMPLATE_LIMITS). */
  limits?: TemplateLimits;
  /** Variables whose strings count as input (message text): their characters are marked in the output. */
  inputVariables?: readonly string[];
  /**
   * Variables given the same data render after render (a chat's tools): their converted values
   * are kept and reused while the data converts to exactly them (reuse.ts).
   */
  reusable?: readonly string[];
  /** Called when the render ends (or fails) with the budget it used. */
  onUsage?: (usage: TemplateUsage) => void;
  /** How floats and strings in containers print: "python" (default, as Python's Jinja) or "reference" (llama.cpp's engine). See value.ts. */
  printing?: PrintStyle;
}

/** A rendering and which of its characters came from input variables. */
export interface MarkedRender {
  text: string;
  /** Sorted, disjoint `[start, end)` ranges (UTF-16 code units of `text`), flattened. */
  marks: Marks;
}

/** The scope every render starts from: the reference's context constants. */
export function baseScope(): Scope {
  const s = new Scope();
  s.set("true", bool(true));
  s.set("True", bool(true));
  s.set("false", bool(false));
  s.set("False", bool(false));
  s.set("none", none());
  s.set("None", none());
  return s;
}

/**
 * Turns anything a render throws into a TemplateError: ERR_TEMPLATE_LIMIT for a budget that ran
 * out (a stack overflow included), else ERR_TEMPLATE_RENDER; with the failing expression and its
 * line and column.
 */
export function asRenderError(e: unknown, compiled: CompiledTemplate): LlamapegError {
  if (e instanceof LlamapegError) return e;
  const node = e instanceof Error ? failedNodes.get(e) : undefined;
  const offset = node ? compiled.positions.get(node) : undefined;
  const position = offset !== undefined ? lineColumn(compiled.source, offset) : undefined;
  const context = node ? ` (in \`${snippet(node)}\`${offset !== undefined ? ` at ${where(compiled.source, offset)}` : ""})` : "";
  const overflow = e instanceof RangeError && /call stack/i.test(e.message);
  if (e instanceof TemplateLimitError || overflow) {
    const limit = e instanceof TemplateLimitError ? e.limit : "nesting";
    const msg = e instanceof TemplateLimitError ? e.message : `the template recursed until the stack ran out (${e.message})`;
    return new TemplateError("ERR_TEMPLATE_LIMIT", `chat template stopped: ${msg}${context}`, {
      hash: compiled.hash,
      ...(position ? { position } : {}),
      limit,
      cause: e,
    });
  }
  const raised = e instanceof TemplateRaisedError;
  const msg = e instanceof Error ? e.message : String(e);
  return new TemplateError(
    "ERR_TEMPLATE_RENDER",
    (raised ? `chat template raised an exception: ${msg}` : `chat template failed to render: ${msg}`) + context,
    { hash: compiled.hash, ...(position ? { position } : {}), cause: e },
  );
}

function scopeOf(variables: Record<string, unknown>, inputs: ReadonlySet<string>, reusable: ReadonlySet<string>, settle: (() => void)[]): Scope {
  const scope = baseScope();
  for (const [k, v] of Object.entries(variables)) {
    if (v === undefined) continue;
    try {
      if (reusable.has(k) && typeof v === "object" && v !== null) {
        const c = convertReusable(k, v, inputs.has(k));
        settle.push(c.settle);
        scope.set(k, c.value);
      } else {
        scope.set(k, fromJS(v, inputs.has(k)));
      }
    } catch (e) {
      // functions, symbols, cycles: not data a template can be given
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `template variable '${k}' is not JSON-like data: ${(e as Error).message}`, {
        where: `variables.${k}`,
        cause: e,
      });
    }
  }
  return scope;
}

/**
 * Renders `source` with `variables` (plain JSON-compatible data; keys become template variables)
 * and says which output characters came from `options.inputVariables`.
 */
export function renderTemplateMarked(source: string, variables: Record<string, unknown>, options: RenderOptions = {}): MarkedRender {
  const compiled = compileTemplate(source);
  const budget = new Budget(resolveLimits(options.limits));
  const settle: (() => void)[] = [];
  const scope = scopeOf(variables, new Set(options.inputVariables ?? []), new Set(options.reusable ?? []), settle);
  try {
    const out = withPrintStyle(options.printing ?? "python", () => new Evaluator({ stats: false, now: options.now ?? new Date() }, budget).renderMarked(compiled.program, scope));
    return { text: out.v, marks: out.m ?? [] };
  } catch (e) {
    throw asRenderError(e, compiled);
  } finally {
    for (const f of settle) f();
    options.onUsage?.(budget.usage());
  }
}

/** Renders `source` with `variables` (plain JSON-compatible data; keys become template variables). */
export function renderTemplate(source: string, variables: Record<string, unknown>, options: RenderOptions = {}): string {
  return renderTemplateMarked(source, variables, options).text;
}

export type { JValue };
