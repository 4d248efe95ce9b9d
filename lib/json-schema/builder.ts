/**
 * The public entry points: {@link buildGrammar} (the grammar-builder callback API that chat and
 * PEG code use to mix hand-written rules with schema rules in one GBNF text), and
 * {@link jsonSchemaToGbnf} / {@link compileJsonSchema} for a single schema. The text matches
 * llama.cpp's `build_grammar` / `json_schema_to_grammar` for the same input, except where
 * docs/json-schema.md lists a deliberate difference.
 */
import { LlamapegError } from "../errors.js";
import { checkGbnf } from "../gbnf/check.js";
import { checkSchemaDepth } from "./depth.js";
import { asDeclaredDraft } from "./dialect.js";
import { Emitter } from "./emit.js";
import { resolveRefs, type RefTable } from "./refs.js";
import type { JsonWhitespace } from "./layout.js";
import { Reporter, type SchemaWarning, type UnsupportedMode } from "./report.js";
import { RuleSet } from "./rules.js";

export interface GrammarBuilder {
  /** Add `name ::= body` (name sanitized; a clash with a different body gets a numeric suffix). Returns the name used. */
  addRule(name: string, body: string): string;
  /** Add the rules for a JSON schema under `name` ("" or "root" for the grammar root). Returns the rule name. */
  addSchema(name: string, schema: unknown): string;
  /** Register the local `$ref`s of `schema`; call before {@link GrammarBuilder.addSchema} for schemas that use refs. */
  resolveRefs(schema: unknown): void;
  /** How JSON whitespace is written (layout.ts): hand-written rules around schemas follow it too. */
  readonly jsonWhitespace: JsonWhitespace;
}

/**
 * `"default"`: the compiler that covers what the best engines cover (docs/json-schema.md, "Default
 * mode"); `"reference"`: llama.cpp's `json_schema_to_grammar` text byte for byte.
 */
export type SchemaMode = "default" | "reference";

/** Where the default mode lets an object's declared properties stand: as declared, or anywhere. */
export type PropertyOrder = "declared" | "any";

export interface GrammarOptions {
  /** Which compiler: `"reference"` (the default here, for the chat layer's plans) or `"default"`. */
  schemaMode?: SchemaMode;
  /** `.` in patterns matches line breaks too. */
  dotall?: boolean;
  /** Default mode: object properties in declaration order (default), or in any order (docs/json-schema.md, "Property order"). */
  propertyOrder?: PropertyOrder;
  /** What to do with a keyword the compiler cannot honour: throw (default) or leave it out with a warning. */
  unsupported?: UnsupportedMode;
  /** Receives the warnings of `unsupported: "ignore"`. */
  warnings?: SchemaWarning[];
  /** JSON whitespace (layout.ts): "canonical" (the default mode's default) or "flexible" (llama.cpp's; always in reference mode). */
  jsonWhitespace?: JsonWhitespace;
}

/**
 * Build one GBNF grammar from a callback that adds rules and schemas, like llama.cpp's
 * `build_grammar`. Rules come out sorted by name, one `name ::= body` line each, with the
 * `space` rule always present.
 */
export function buildGrammar(cb: (b: GrammarBuilder) => void, options: GrammarOptions = {}): string {
  // the callback API keeps llama.cpp's text unless asked: the chat layer's plans (and their
  // conformance suites) build on it; compileJsonSchema / jsonSchemaToGbnf default to "default"
  const reference = (options.schemaMode ?? "reference") === "reference";
  const rules = new RuleSet(reference, reference ? "flexible" : (options.jsonWhitespace ?? "canonical"));
  const refs: RefTable = new Map();
  const report = new Reporter(options.unsupported ?? "error");
  const emitter = new Emitter(rules, refs, report, options.dotall ?? false, options.propertyOrder ?? "declared");
  const builder: GrammarBuilder = {
    addRule: (name, body) => rules.add(name, body, true),
    jsonWhitespace: rules.jsonWhitespace,
    // the default mode reads a document as its declared draft does (dialect.ts)
    addSchema: (name, schema) => {
      checkSchemaDepth(schema, "#");
      return emitter.addSchema(name === "root" ? "" : name, rules.reference ? schema : asDeclaredDraft(schema));
    },
    resolveRefs: (schema) => {
      checkSchemaDepth(schema, "#");
      resolveRefs(rules.reference ? schema : asDeclaredDraft(schema), refs, report, !rules.reference);
    },
  };
  try {
    cb(builder);
  } finally {
    options.warnings?.push(...report.warnings);
  }
  return rules.format();
}

export interface CompileOptions {
  /** Which compiler (default `"default"`; `"reference"` for llama.cpp's exact grammar). */
  schemaMode?: SchemaMode;
  dotall?: boolean;
  unsupported?: UnsupportedMode;
  /** See {@link GrammarOptions.propertyOrder}. */
  propertyOrder?: PropertyOrder;
  /** See {@link GrammarOptions.jsonWhitespace}. */
  jsonWhitespace?: JsonWhitespace;
}

export interface CompiledSchema {
  gbnf: string;
  warnings: SchemaWarning[];
}

/**
 * One schema to GBNF, with the warnings collected in `unsupported: "ignore"` mode. The grammar is
 * one llama.cpp's grammar engine accepts (checkGbnf): a schema whose grammar it would not (10,000
 * optional properties make a chain of rules it recurses through) is ERR_SCHEMA_UNSUPPORTED.
 */
export function compileJsonSchema(schema: unknown, options: CompileOptions = {}): CompiledSchema {
  const warnings: SchemaWarning[] = [];
  const gbnf = buildGrammar(
    (b) => {
      b.resolveRefs(schema);
      b.addSchema("", schema);
    },
    { ...options, schemaMode: options.schemaMode ?? "default", warnings },
  );
  try {
    checkGbnf(gbnf);
  } catch (e) {
    const reason = e instanceof LlamapegError ? e.message : String(e);
    throw new LlamapegError("ERR_SCHEMA_UNSUPPORTED", `unsupported JSON schema construct at #: its grammar is beyond llama.cpp's grammar engine (${reason})`, { where: "#", cause: e });
  }
  return { gbnf, warnings };
}

/**
 * JSON Schema -> GBNF (root rule `root`). Throws `LlamapegError` `ERR_SCHEMA_UNSUPPORTED` for a
 * keyword the grammar cannot honour (unless `unsupported: "ignore"`) and `ERR_SCHEMA_INVALID` for
 * a malformed schema; `where` holds the JSON pointer.
 */
export function jsonSchemaToGbnf(schema: unknown, options: CompileOptions = {}): string {
  return compileJsonSchema(schema, options).gbnf;
}
