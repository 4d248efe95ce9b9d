/**
 * `$ref` resolution. Only local refs (`#/...`) are supported, as in the reference; a remote or
 * relative ref is unsupported and a local ref that points nowhere is an invalid schema.
 * Refs are keyed by their text, like the reference's converter, so schemas added to one grammar
 * share them; the same text naming two different targets is reported instead of silently
 * reusing the first.
 */
import { jsonDump, pointerJoin } from "./literal.js";
import { isObject } from "../json-syntax.js";
/** Where resolution problems go; `Reporter` throws on invalid refs, SchemaInfo ignores them. */
export interface RefReporter {
  unsupported(keyword: string, message: string, where: string): void;
  invalid(message: string, where: string): void;
}

export interface RefTarget {
  readonly schema: unknown;
  /** JSON pointer of the target inside its document, for messages. */
  readonly where: string;
}

export type RefTable = Map<string, RefTarget>;

function decodeToken(token: string): string {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Find the node a local ref (`#/a/b/0`) points at inside `root`, or undefined. */
export function lookupPointer(root: unknown, ref: string): RefTarget | undefined {
  const tokens = ref.slice(ref.indexOf("#") + 1).split("/").slice(1);
  let target = root;
  let where = "#";
  for (const raw of tokens) {
    const token = decodeToken(raw);
    if (isObject(target) && Object.hasOwn(target, token)) {
      target = target[token];
    } else if (Array.isArray(target) && /^\d+$/.test(token) && Number(token) < target.length) {
      target = target[Number(token)];
    } else {
      return undefined;
    }
    where = pointerJoin(where, token);
  }
  return { schema: target, where };
}

/**
 * Record every `$ref` found anywhere in `root` (a worklist walk, no recursion depth limit) in
 * `table`. Unlike the reference, refs below an object that itself has `$ref` are resolved too.
 */
export function resolveRefs(root: unknown, table: RefTable, report: RefReporter, namesAreNames = false): void {
  // namesAreNames (default mode): the members of `properties`/`patternProperties`/`$defs` are
  // named subschemas, so a property called "$ref" is not a ref
  const work: Array<{ node: unknown; where: string; names?: boolean }> = [{ node: root, where: "#" }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const { node, where, names } = item;
    if (Array.isArray(node)) {
      node.forEach((child, i) => work.push({ node: child, where: pointerJoin(where, i) }));
      continue;
    }
    if (!isObject(node)) continue;
    for (const [key, child] of Object.entries(node)) {
      const holdsNames = namesAreNames && !names && ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"].includes(key);
      if (key !== "$ref" || names) work.push({ node: child, where: pointerJoin(where, key), ...(holdsNames ? { names: true } : {}) });
    }
    if (names || !Object.hasOwn(node, "$ref")) continue;
    const ref = node["$ref"];
    const refWhere = pointerJoin(where, "$ref");
    if (typeof ref !== "string") {
      report.invalid(`$ref must be a string, got ${jsonDump(ref)}`, refWhere);
      continue;
    }
    if (!ref.startsWith("#/")) {
      report.unsupported("$ref", `only local refs starting with "#/" are supported, got ${JSON.stringify(ref)}`, refWhere);
      continue;
    }
    const target = lookupPointer(root, ref);
    if (target === undefined) {
      report.invalid(`$ref ${JSON.stringify(ref)} points to nothing in the schema`, refWhere);
      continue;
    }
    const known = table.get(ref);
    if (known === undefined) {
      table.set(ref, target);
    } else if (jsonDump(known.schema) !== jsonDump(target.schema)) {
      report.unsupported(
        "$ref",
        `$ref ${JSON.stringify(ref)} names a different schema than the same ref in an earlier schema of this grammar; ref names are shared across one grammar`,
        refWhere,
      );
    }
  }
}
