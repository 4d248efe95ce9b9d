/**
 * Template errors with a source position. Inside the engine, syntax and limit errors are plain
 * classes; at the API edge every template failure becomes a `TemplateError` (a LlamapegError with
 * code ERR_TEMPLATE_RENDER or ERR_TEMPLATE_LIMIT) that names the line and column.
 */
import { LlamapegError } from "../errors.js";

/** The budgets a render runs under (see limits.ts for the defaults and what each one counts). */
export type TemplateLimitName = "steps" | "output" | "memory" | "nesting" | "items";

/** A lexer or parser error at a known offset of the source. */
export class TemplateSyntaxError extends Error {
  override name = "TemplateSyntaxError";
  constructor(
    message: string,
    readonly source: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** A render budget ran out. `limit` names it; the evaluator records the node it happened in. */
export class TemplateLimitError extends Error {
  override name = "TemplateLimitError";
  constructor(
    readonly limit: TemplateLimitName,
    message: string,
    /** The source offset when it is known where the error is thrown (parse-time limits). */
    readonly offset?: number,
  ) {
    super(message);
  }
}

/** What a template error tells beyond its message. */
export interface TemplatePosition {
  /** 1-based; absent only when the position cannot be known (a template that is not text). */
  line?: number;
  column?: number;
}

/** ERR_TEMPLATE_RENDER / ERR_TEMPLATE_LIMIT with the position in the template source. */
export class TemplateError extends LlamapegError {
  readonly line?: number;
  readonly column?: number;
  /** For ERR_TEMPLATE_LIMIT: which budget ran out. */
  readonly limit?: TemplateLimitName;

  constructor(
    code: "ERR_TEMPLATE_RENDER" | "ERR_TEMPLATE_LIMIT",
    message: string,
    options: { hash: string; position?: TemplatePosition; limit?: TemplateLimitName; cause?: unknown },
  ) {
    const { line, column } = options.position ?? {};
    const at = line !== undefined ? ` line ${line}, column ${column}` : "";
    super(code, message, { where: `template ${options.hash.slice(0, 12)}${at}`, cause: options.cause });
    this.name = "LlamapegError";
    if (line !== undefined) this.line = line;
    if (column !== undefined) this.column = column;
    if (options.limit !== undefined) this.limit = options.limit;
  }
}
