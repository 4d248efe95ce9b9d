/**
 * Tool schemas the grammar cannot fully express must not fail a request: keywords the grammar cannot
 * enforce are dropped (with a warning naming them), and a schema that cannot be compiled at all
 * makes that one tool take any JSON object as arguments (with a warning). The other tools keep their
 * exact grammars.
 */
import { LlamapegError } from "../../errors.js";
import { compileJsonSchema } from "../../json-schema/index.js";
import type { ChatTool } from "../tools.js";

const PERMISSIVE = { type: "object" } as const;

/** Deletes the member a JSON pointer like `#/properties/e/not` names. */
function deleteAt(schema: unknown, pointer: string): boolean {
  const parts = pointer.replace(/^#\/?/, "").split("/").filter((p) => p !== "").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (parts.length === 0) return false;
  let node: unknown = schema;
  for (const p of parts.slice(0, -1)) {
    if (typeof node !== "object" || node === null) return false;
    node = (node as Record<string, unknown>)[p];
  }
  if (typeof node !== "object" || node === null) return false;
  const last = parts[parts.length - 1]!;
  if (!(last in node)) return false;
  if (Array.isArray(node)) node.splice(Number(last), 1);
  else delete (node as Record<string, unknown>)[last];
  return true;
}

/** `schema` without the keywords the grammar cannot enforce, and what was dropped. */
export function enforceableSchema(schema: Record<string, unknown>, where: string, warnings: string[]): Record<string, unknown> {
  const copy = structuredClone(schema);
  // Each pass drops what the compiler reported; dropping a keyword can expose another one below it.
  for (let pass = 0; pass < 16; pass++) {
    const { warnings: found } = compileJsonSchema(copy, { unsupported: "ignore" });
    if (found.length === 0) return copy;
    let dropped = false;
    for (const w of found) {
      if (deleteAt(copy, w.where)) {
        dropped = true;
        warnings.push(`${where}: not enforced by the grammar: ${w.message}`);
      }
    }
    if (!dropped) break;
  }
  return copy;
}

/** The tools with schemas the grammar can enforce (warnings added to `warnings`). */
export function sanitizeToolSchemas(tools: readonly ChatTool[], warnings: string[]): ChatTool[] {
  return tools.map((tool, i) => {
    const params = tool.function.parameters;
    if (params === undefined) return tool;
    const where = `tools[${i}].function.parameters (${tool.function.name})`;
    try {
      const schema = enforceableSchema(params, where, warnings);
      compileJsonSchema(schema); // anything still unsupported falls through to the catch
      return { ...tool, function: { ...tool.function, parameters: schema } };
    } catch (e) {
      if (!(e instanceof LlamapegError)) throw e;
      warnings.push(`${where}: ${e.message}; this tool's arguments are constrained to any JSON object`);
      return { ...tool, function: { ...tool.function, parameters: { ...PERMISSIVE } } };
    }
  });
}

/**
 * The response schema without the keywords the grammar cannot enforce (with warnings); a schema
 * that cannot be compiled at all is a request error naming `where`.
 */
export function enforceableResponseSchema(schema: Record<string, unknown>, where: string, warnings: string[]): Record<string, unknown> {
  try {
    const out = enforceableSchema(schema, where, warnings);
    compileJsonSchema(out);
    return out;
  } catch (e) {
    if (e instanceof LlamapegError) throw new LlamapegError("ERR_INVALID_REQUEST", `${where}: ${e.message}`, { where, cause: e });
    throw e;
  }
}
