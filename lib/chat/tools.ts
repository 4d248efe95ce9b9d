/**
 * Tool definitions as requests carry them (OpenAI `tools`), and the small reads the chat grammar
 * builders make of them.
 */
export interface ChatToolFunction {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export interface ChatTool {
  type?: "function";
  function: ChatToolFunction;
}

/** Tools with a `function` entry, in order (others are skipped, as the reference does). */
export function toolFunctions(tools: readonly ChatTool[] | undefined): ChatToolFunction[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter((t) => typeof t === "object" && t !== null && typeof t.function === "object" && t.function !== null).map((t) => t.function);
}

/** The arguments schema of a function (`{}` when it has none). */
export function toolParameters(fn: ChatToolFunction): Record<string, unknown> {
  return fn.parameters !== undefined && typeof fn.parameters === "object" && fn.parameters !== null ? fn.parameters : {};
}

/** The `properties` of a function's schema, in definition order. */
export function toolProperties(fn: ChatToolFunction): [string, Record<string, unknown>][] {
  const props = toolParameters(fn).properties;
  if (typeof props !== "object" || props === null || Array.isArray(props)) return [];
  return Object.entries(props as Record<string, Record<string, unknown>>);
}

/** The `required` names of a function's schema. */
export function toolRequired(fn: ChatToolFunction): Set<string> {
  const req = toolParameters(fn).required;
  return new Set(Array.isArray(req) ? req.filter((r): r is string => typeof r === "string") : []);
}
