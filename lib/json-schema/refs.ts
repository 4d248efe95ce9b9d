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

const NAME_HOLDERS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/**
 * Record every `$ref` found anywhere in `root` (a worklist walk, no recursion depth limit) in
 * `table`. Unlike the reference, refs below an object that itself has `$ref` are resolved too.
 */
export function resolveRefs(root: unknown, table: RefTable, report: RefReporter, namesAreNames = false): void {
  // namesAreNames (default mode): the members of `properties`/`patternProperties`/`$defs` are
  // named subschemas, so a property called "$ref" is not a ref. A node's JSON pointer is written
  // only for a message (from its parent and key): writing one for every node of a large schema
  // was most of this walk.
  interface Item {
    node: unknown;
    up: Item | null;
    key: string | number;
    names: boolean;
  }
  const refWhere = (item: Item): string => {
    const keys: (string | number)[] = ["$ref"];
    for (let at: Item | null = item; at !== null && at.up !== null; at = at.up) keys.push(at.key);
    return keys.reduceRight<string>((where, key) => pointerJoin(where, key), "#");
  };
  const work: Item[] = [{ node: root, up: null, key: "", names: false }];
  const looked = new Map<string, RefTarget | undefined>();
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const { node, names } = item;
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        if (typeof child === "object" && child !== null) work.push({ node: child, up: item, key: i, names: false });
      });
      continue;
    }
    if (!isObject(node)) continue;
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      const child = node[key];
      if (typeof child !== "object" || child === null) continue;
      const holdsNames = namesAreNames && !names && NAME_HOLDERS.has(key);
      if (key !== "$ref" || names) work.push({ node: child, up: item, key, names: holdsNames });
    }
    if (names || !Object.hasOwn(node, "$ref")) continue;
    const ref = node["$ref"];
    if (typeof ref !== "string") {
      report.invalid(`$ref must be a string, got ${jsonDump(ref)}`, refWhere(item));
      continue;
    }
    if (!ref.startsWith("#/")) {
      report.unsupported("$ref", `only local refs starting with "#/" are supported, got ${JSON.stringify(ref)}`, refWhere(item));
      continue;
    }
    // the same ref again in this document: the same target
    let target = looked.get(ref);
    if (target === undefined && !looked.has(ref)) looked.set(ref, (target = lookupPointer(root, ref)));
    if (target === undefined) {
      report.invalid(`$ref ${JSON.stringify(ref)} points to nothing in the schema`, refWhere(item));
      continue;
    }
    const known = table.get(ref);
    if (known === undefined) {
      table.set(ref, target);
    } else if (known.schema !== target.schema && jsonDump(known.schema) !== jsonDump(target.schema)) {
      report.unsupported(
        "$ref",
        `$ref ${JSON.stringify(ref)} names a different schema than the same ref in an earlier schema of this grammar; ref names are shared across one grammar`,
        refWhere(item),
      );
    }
  }
}
