/**
 * Raw rendering: a template source plus a variables object -> text. No chat-specific
 * preprocessing here (see chat-context.ts for what the reference does to messages first).
 */
import { LlamapegError } from "../../errors.js";
import { compileTemplate } from "./compile.js";
import { Evaluator, Scope, failedNodes } from "./interpreter.js";
import { locateNode, snippet } from "./locate.js";
import { type JValue, TemplateRaisedError, bool, fromJS, none } from "./value.js";

export interface RenderOptions {
  /** What `strftime_now` formats (local time). Default: the current time. */
  now?: Date;
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
 * Turns anything a render throws into ERR_TEMPLATE_RENDER: the template's message, the failing
 * expression and, where the source shows it, its line and column.
 */
export function asRenderError(e: unknown, hash: string, source?: string): LlamapegError {
  if (e instanceof LlamapegError) return e;
  const raised = e instanceof TemplateRaisedError;
  const msg = e instanceof RangeError ? `template recursion too deep (${e.message})` : e instanceof Error ? e.message : String(e);
  const node = e instanceof Error ? failedNodes.get(e) : undefined;
  const at = node && source !== undefined ? locateNode(source, node) : undefined;
  const context = node ? ` (in \`${snippet(node)}\`${at ? ` at ${at}` : ""})` : "";
  return new LlamapegError(
    "ERR_TEMPLATE_RENDER",
    (raised ? `chat template raised an exception: ${msg}` : `chat template failed to render: ${msg}`) + context,
    { where: `template ${hash.slice(0, 12)}${at ? ` ${at.replace(/ \(.*\)$/, "")}` : ""}`, cause: e },
  );
}

/**
 * Renders `source` with `variables` (plain JSON-compatible data; keys become template variables).
 * Values already converted (JValue) may be passed through `prepared` (used by capability probing).
 */
export function renderTemplate(source: string, variables: Record<string, unknown>, options: RenderOptions = {}): string {
  const compiled = compileTemplate(source);
  const scope = baseScope();
  for (const [k, v] of Object.entries(variables)) {
    if (v === undefined) continue;
    try {
      scope.set(k, fromJS(v));
    } catch (e) {
      // functions, symbols, cycles: not data a template can be given
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `template variable '${k}' is not JSON-like data: ${(e as Error).message}`, {
        where: `variables.${k}`,
        cause: e,
      });
    }
  }
  try {
    return new Evaluator({ stats: false, now: options.now ?? new Date() }).render(compiled.program, scope);
  } catch (e) {
    throw asRenderError(e, compiled.hash, compiled.source);
  }
}

export type { JValue };
