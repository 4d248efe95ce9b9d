/**
 * The draft a document declares, where it changes what a schema means (default mode): up to
 * draft 7, keywords beside `$ref` are ignored ("All other properties in a $ref object MUST be
 * ignored"), from 2019-09 on they apply too. A document whose `$schema` names draft 4, 6 or 7 is
 * rewritten once with those keywords dropped (annotations and `$defs`/`definitions` kept), so the
 * normalizer, the value validator and the disjointness prover all read it the same way. Draft 4
 * and 6 documents also lose `if`/`then`/`else`: draft 7 introduced them, and the older drafts'
 * validators ignore them as unknown words. No reference counterpart (llama.cpp applies neither
 * rule consistently).
 */
import { ASSERTION_KEYWORDS } from "./keywords.js";
import { isObject } from "../json-syntax.js";

/** Members whose values are named subschemas (a property called "$ref" is a property). */
const NAME_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]);

const cache = new WeakMap<object, unknown>();

/** Whether `$schema` names a draft whose `$ref` ignores the keywords beside it. */
export function refIgnoresSiblings(schema: unknown): boolean {
  return isObject(schema) && typeof schema["$schema"] === "string" && /draft-0[4-7]\b/.test(schema["$schema"]);
}

/** The document as its draft reads it (the same object when nothing changes; cached per document). */
export function asDeclaredDraft(schema: unknown): unknown {
  if (!refIgnoresSiblings(schema)) return schema;
  const known = cache.get(schema as object);
  if (known !== undefined) return known;
  const out = strip(schema, /draft-0[46]\b/.test(String((schema as Record<string, unknown>)["$schema"])));
  cache.set(schema as object, out);
  return out;
}

/**
 * A copy with the assertions beside every `$ref` dropped, and with `noConditionals` every
 * `if`/`then`/`else` (an explicit stack: no recursion depth).
 */
function strip(root: unknown, noConditionals: boolean): unknown {
  const copy = (v: unknown): unknown => (Array.isArray(v) ? [...v] : isObject(v) ? { ...v } : v);
  const top = copy(root);
  const work: Array<{ node: unknown; names: boolean }> = [{ node: top, names: false }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    const { node, names } = item;
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        node[i] = copy(child);
        work.push({ node: node[i], names: false });
      });
      continue;
    }
    if (!isObject(node)) continue;
    if (!names && typeof node["$ref"] === "string") {
      for (const k of Object.keys(node)) if (k !== "$ref" && ASSERTION_KEYWORDS.includes(k)) delete node[k];
    }
    if (!names && noConditionals) for (const k of ["if", "then", "else"]) delete node[k];
    for (const [k, child] of Object.entries(node)) {
      node[k] = copy(child);
      work.push({ node: node[k], names: !names && NAME_MAPS.has(k) && isObject(child) });
    }
  }
  return top;
}
