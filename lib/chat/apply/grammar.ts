/**
 * The GBNF of a plan's tree: exported from one of its nodes (eager: the whole output, or its
 * calls-only variant; the generation prompt first, for the sampler to prefill) or from its trigger
 * rules (lazy), with the JSON schemas the tree's schema nodes point into registered first (as
 * chat.cpp's `build_grammar` calls do).
 */
import { type JsonWhitespace, type PropertyOrder, type SchemaMode, buildGrammar } from "../../json-schema/index.js";
import type { PegArena } from "../../peg/arena.js";
import { buildArenaGrammar } from "../../peg/gbnf.js";

export interface TreeGrammarOptions {
  /** The node the grammar's `root` is, or "lazy" for the trigger rules. */
  from: number | "lazy";
  /** Schemas whose `$ref`s the tree's schema nodes use (the tools' parameters, the response schema). */
  schemas: readonly unknown[];
  /** The schema compiler: "default" (docs/json-schema.md) or "reference" (llama.cpp's text, reference_mode). */
  schemaMode: SchemaMode;
  /** JSON whitespace of the default mode (json-schema/layout.ts). */
  jsonWhitespace: JsonWhitespace;
  /** Property order of the default mode (json-schema/emit.ts). */
  propertyOrder: PropertyOrder;
}

export function treeGbnf(arena: PegArena, { from, schemas, schemaMode, jsonWhitespace, propertyOrder }: TreeGrammarOptions): string {
  return buildGrammar((b) => {
    for (const schema of schemas) b.resolveRefs(structuredClone(schema));
    buildArenaGrammar({ nodes: arena.nodes, rules: arena.rules, root: from === "lazy" ? arena.root : from }, b, from === "lazy");
  }, { schemaMode, jsonWhitespace, propertyOrder });
}
