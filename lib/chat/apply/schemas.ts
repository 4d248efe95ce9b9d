/**
 * Tool schemas the grammar cannot fully express must not fail a request: keywords the grammar cannot
 * enforce are dropped (with a warning naming them), and a schema that cannot be compiled at all
 * makes that one tool take any JSON object as arguments (with a warning). The other tools keep their
 * exact grammars.
 */
import { boundedCache } from "../../cache.js";
import { LlamapegError } from "../../errors.js";
import { type SchemaMode, checkSchemaDepth, compileJsonSchema } from "../../json-schema/index.js";
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

interface Enforceable {
  schema: Record<string, unknown>;
  /** The compiler reported nothing: the schema compiles as it is (no second, strict compile needed). */
  clean: boolean;
}

/** `schema` without the keywords the grammar cannot enforce, and what was dropped. */
function enforceable(schema: Record<string, unknown>, where: string, warnings: string[], schemaMode: SchemaMode): Enforceable {
  let copy: Record<string, unknown> | null = null; // copied only when something is dropped
  // Each pass drops what the compiler reported; dropping a keyword can expose another one below it.
  for (let pass = 0; pass < 16; pass++) {
    const { warnings: found } = compileJsonSchema(copy ?? schema, { unsupported: "ignore", schemaMode });
    if (found.length === 0) return { schema: copy ?? schema, clean: copy === null };
    copy ??= structuredClone(schema);
    let dropped = false;
    for (const w of found) {
      if (deleteAt(copy, w.where)) {
        dropped = true;
        warnings.push(`${where}: not enforced by the grammar: ${w.message}`);
      }
    }
    if (!dropped) break;
  }
  return { schema: copy ?? schema, clean: false };
}

export function enforceableSchema(schema: Record<string, unknown>, where: string, warnings: string[], schemaMode: SchemaMode = "default"): Record<string, unknown> {
  return enforceable(schema, where, warnings, schemaMode).schema;
}

/** Tool schemas already checked: JSON text -> the schema the grammar gets (null: as given) and the warnings. */
const degraded = boundedCache<string, { schema: Record<string, unknown> | null; warnings: string[] }>(1024);

/** The tools with schemas the grammar can enforce (warnings added to `warnings`). */
export function sanitizeToolSchemas(tools: readonly ChatTool[], warnings: string[], schemaMode: SchemaMode = "default"): ChatTool[] {
  return tools.map((tool, i) => {
    const params = tool.function.parameters;
    if (params === undefined) return tool;
    const where = `tools[${i}].function.parameters (${tool.function.name})`;
    checkSchemaDepth(params, where); // before anything recurses over it (JSON.stringify included)
    // every input of the entry: the mode, the place its warnings name, the schema
    const key = JSON.stringify([schemaMode, where, params]);
    let hit = degraded.get(key);
    if (hit === undefined) {
      const own: string[] = [];
      let schema: Record<string, unknown> | null;
      try {
        const e = enforceable(params, where, own, schemaMode);
        if (!e.clean) compileJsonSchema(e.schema, { schemaMode }); // anything still unsupported falls through to the catch
        schema = e.clean ? null : e.schema;
      } catch (e) {
        if (!(e instanceof LlamapegError)) throw e;
        own.push(`${where}: ${e.message}; this tool's arguments are constrained to any JSON object`);
        schema = { ...PERMISSIVE };
      }
      hit = { schema, warnings: own };
      degraded.set(key, hit);
    }
    warnings.push(...hit.warnings);
    return hit.schema === null ? tool : { ...tool, function: { ...tool.function, parameters: structuredClone(hit.schema) } };
  });
}

/**
 * The response schema without the keywords the grammar cannot enforce (with warnings); a schema
 * that cannot be compiled at all is a request error naming `where`.
 */
export function enforceableResponseSchema(schema: Record<string, unknown>, where: string, warnings: string[], schemaMode: SchemaMode = "default"): Record<string, unknown> {
  try {
    const out = enforceableSchema(schema, where, warnings, schemaMode);
    compileJsonSchema(out, { schemaMode });
    return out;
  } catch (e) {
    if (e instanceof LlamapegError) throw new LlamapegError("ERR_INVALID_REQUEST", `${where}: ${e.message}`, { where, cause: e });
    throw e;
  }
}
