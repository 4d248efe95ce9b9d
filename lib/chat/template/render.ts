/**
 * Raw rendering: a template source plus a variables object -> text. No chat-specific
 * preprocessing here (see chat-context.ts for what the reference does to messages first).
 */
import { LlamapegError } from "../../errors.js";
import { compileTemplate } from "./compile.js";
import { Evaluator, Scope } from "./interpreter.js";
import { type JValue, type RuntimeHooks, TemplateRaisedError, bool, fromJS, none } from "./value.js";

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

/** Runs `fn` and turns anything it throws into ERR_TEMPLATE_RENDER naming the template. */
export function asRenderError(e: unknown, hash: string): LlamapegError {
  if (e instanceof LlamapegError) return e;
  const raised = e instanceof TemplateRaisedError;
  const msg = e instanceof RangeError ? `template recursion too deep (${e.message})` : e instanceof Error ? e.message : String(e);
  return new LlamapegError("ERR_TEMPLATE_RENDER", raised ? `chat template raised an exception: ${msg}` : `chat template failed to render: ${msg}`, {
    where: `template ${hash.slice(0, 12)}`,
    cause: e,
  });
}

/**
 * Renders `source` with `variables` (plain JSON-compatible data; keys become template variables).
 * Values already converted (JValue) may be passed through `prepared` (used by capability probing).
 */
export function renderTemplate(source: string, variables: Record<string, unknown>, options: RenderOptions = {}): string {
  const compiled = compileTemplate(source);
  const scope = baseScope();
  for (const [k, v] of Object.entries(variables)) if (v !== undefined) scope.set(k, fromJS(v));
  return run(compiled.program, compiled.hash, scope, { stats: false, now: options.now ?? new Date() });
}

export function run(program: Parameters<Evaluator["render"]>[0], hash: string, scope: Scope, rt: RuntimeHooks): string {
  try {
    return new Evaluator(rt).render(program, scope);
  } catch (e) {
    throw asRenderError(e, hash);
  }
}

export type { JValue };
