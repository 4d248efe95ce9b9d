/**
 * The nesting check that runs before anything recurses over a schema (issue 28: a 100,000-level
 * schema overflowed the JS stack in the first recursive walk, before the normalizer's documented
 * 256-subschema limit could answer). An explicit worklist, so the check itself cannot overflow.
 * One subschema level is at most a few JSON levels (`properties` + name, `anyOf` + index), so a
 * schema within the 256-subschema limit stays within {@link MAX_JSON_DEPTH}.
 */
import { LlamapegError } from "../errors.js";
import { MAX_SCHEMA_DEPTH } from "./normalize.js";

/** Deepest JSON nesting (objects and arrays) a schema may have. */
export const MAX_JSON_DEPTH = 4 * MAX_SCHEMA_DEPTH;

/** Throws ERR_SCHEMA_INVALID when `schema` nests objects/arrays deeper than {@link MAX_JSON_DEPTH}. */
export function checkSchemaDepth(schema: unknown, where: string): void {
  const work: Array<{ v: unknown; d: number }> = [{ v: schema, d: 0 }];
  const seen = new Set<object>();
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const { v, d } = item;
    if (typeof v !== "object" || v === null || seen.has(v)) continue;
    seen.add(v);
    if (d >= MAX_JSON_DEPTH) {
      throw new LlamapegError(
        "ERR_SCHEMA_INVALID",
        `invalid JSON schema at ${where}: the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels (more than ${MAX_JSON_DEPTH} nested JSON objects and arrays)`,
        { where },
      );
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === "object" && child !== null) work.push({ v: child, d: d + 1 });
    }
  }
}
