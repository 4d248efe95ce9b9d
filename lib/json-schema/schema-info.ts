/**
 * Questions the chat layer asks about a schema without compiling it (llama.cpp's
 * `common_schema_info`): mainly whether a value may be a string, so a tool argument can be taken
 * as raw text.
 */
import { checkSchemaDepth } from "./depth.js";
import { resolveRefs, type RefTable } from "./refs.js";
import { isObject } from "../json-syntax.js";

const STRING_FORMATS = new Set(["date", "time", "date-time", "uri", "email", "hostname", "ipv4", "ipv6", "uuid"]);

export class SchemaInfo {
  private readonly refs: RefTable = new Map();

  /** Register the local `$ref`s of `schema`; refs that cannot be resolved are skipped (as in the reference). */
  resolveRefs(schema: unknown): void {
    checkSchemaDepth(schema, "#");
    resolveRefs(schema, this.refs, { unsupported: () => {}, invalid: () => {} });
  }

  /** True when some branch of `schema` (through anyOf/oneOf/allOf/$ref/type lists) admits a string. */
  resolvesToString(schema: unknown): boolean {
    checkSchemaDepth(schema, "#");
    const visited = new Set<string>();
    const check = (s: unknown): boolean => {
      if (!isObject(s)) return false;
      if (Object.hasOwn(s, "$ref")) {
        const ref = s["$ref"];
        if (typeof ref !== "string" || visited.has(ref)) return false; // a cycle: assume not a string
        visited.add(ref);
        const target = this.refs.get(ref);
        return target !== undefined && check(target.schema);
      }
      const type = s["type"];
      if (type === "string" || (Array.isArray(type) && type.includes("string"))) return true;
      for (const key of ["oneOf", "anyOf"]) {
        const alts = s[key];
        if (Array.isArray(alts) && alts.some(check)) return true;
      }
      const allOf = s["allOf"];
      if (Array.isArray(allOf) && allOf.every(check)) return true;
      if (Object.hasOwn(s, "const") && typeof s["const"] === "string") return true;
      const values = s["enum"];
      if (Array.isArray(values) && values.some((v) => typeof v === "string")) return true;
      if (["pattern", "minLength", "maxLength"].some((k) => Object.hasOwn(s, k))) return true;
      const format = s["format"];
      return typeof format === "string" && (STRING_FORMATS.has(format) || format.startsWith("uuid"));
    };
    return check(schema);
  }
}
