/**
 * A small JSON Schema checker for the keywords tool schemas commonly use (type, enum, const,
 * properties, required, additionalProperties, items, min/max bounds and lengths, pattern, anyOf /
 * oneOf / allOf, local $ref). Used to score outputs (bench, tests); keywords it does not know are
 * not checked. Returns the problems found, each with its JSON pointer.
 */
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function typeOf(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function resolve(root: Record<string, unknown>, ref: string): Record<string, unknown> | undefined {
  if (!ref.startsWith("#")) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(1).split("/").filter((p) => p !== "")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return typeof node === "object" && node !== null ? (node as Record<string, unknown>) : undefined;
}

export function validateJson(value: unknown, schema: Record<string, unknown>): string[] {
  const errors: string[] = [];
  check(value as Json, schema, schema, "#", errors, 0);
  return errors;
}

function check(v: Json, s: Record<string, unknown>, root: Record<string, unknown>, at: string, errors: string[], depth: number): void {
  if (depth > 64) return;
  if (typeof s.$ref === "string") {
    const target = resolve(root, s.$ref);
    if (target !== undefined) check(v, target, root, at, errors, depth + 1);
  }
  const t = typeOf(v);
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!types.some((x) => x === t || (x === "number" && t === "integer"))) errors.push(`${at}: expected ${types.join("|")}, got ${t}`);
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) errors.push(`${at}: not in enum`);
  if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(v)) errors.push(`${at}: not the const value`);
  if (typeof v === "number") {
    if (typeof s.minimum === "number" && v < s.minimum) errors.push(`${at}: below minimum`);
    if (typeof s.maximum === "number" && v > s.maximum) errors.push(`${at}: above maximum`);
    if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) errors.push(`${at}: not above exclusiveMinimum`);
    if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) errors.push(`${at}: not below exclusiveMaximum`);
  }
  if (typeof v === "string") {
    const len = [...v].length;
    if (typeof s.minLength === "number" && len < s.minLength) errors.push(`${at}: shorter than minLength`);
    if (typeof s.maxLength === "number" && len > s.maxLength) errors.push(`${at}: longer than maxLength`);
    if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(v)) errors.push(`${at}: does not match pattern`);
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === "number" && v.length < s.minItems) errors.push(`${at}: fewer than minItems`);
    if (typeof s.maxItems === "number" && v.length > s.maxItems) errors.push(`${at}: more than maxItems`);
    if (typeof s.items === "object" && s.items !== null && !Array.isArray(s.items)) {
      v.forEach((item, i) => check(item, s.items as Record<string, unknown>, root, `${at}/${i}`, errors, depth + 1));
    }
  }
  if (t === "object") {
    const obj = v as Record<string, Json>;
    const props = (typeof s.properties === "object" && s.properties !== null ? s.properties : {}) as Record<string, Record<string, unknown>>;
    for (const name of Array.isArray(s.required) ? (s.required as string[]) : []) if (!(name in obj)) errors.push(`${at}: missing required ${JSON.stringify(name)}`);
    for (const [k, val] of Object.entries(obj)) {
      if (props[k] !== undefined) check(val, props[k]!, root, `${at}/${k}`, errors, depth + 1);
      else if (s.additionalProperties === false) errors.push(`${at}: unexpected property ${JSON.stringify(k)}`);
      else if (typeof s.additionalProperties === "object" && s.additionalProperties !== null) {
        check(val, s.additionalProperties as Record<string, unknown>, root, `${at}/${k}`, errors, depth + 1);
      }
    }
  }
  const sub = (list: unknown): Record<string, unknown>[] => (Array.isArray(list) ? (list as Record<string, unknown>[]) : []);
  for (const part of sub(s.allOf)) check(v, part, root, at, errors, depth + 1);
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = sub(s[key]);
    if (options.length > 0 && !options.some((o) => validateJson(v, { ...o, ...(root.$defs ? { $defs: root.$defs } : {}), ...(root.definitions ? { definitions: root.definitions } : {}) }).length === 0)) {
      errors.push(`${at}: matches none of ${key}`);
    }
  }
}
