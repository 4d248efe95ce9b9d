/**
 * The compiler entry points in reference mode (`schemaMode: "reference"`, llama.cpp's text byte
 * for byte), for the tests that pin the reference's behaviour; the default mode has its own tests
 * (json-schema-default-*.test.ts).
 */
import * as base from "../../../lib/json-schema/index.js";

export const jsonSchemaToGbnf = (schema: unknown, options: base.CompileOptions = {}): string =>
  base.jsonSchemaToGbnf(schema, { schemaMode: "reference", ...options });
export const compileJsonSchema = (schema: unknown, options: base.CompileOptions = {}): base.CompiledSchema =>
  base.compileJsonSchema(schema, { schemaMode: "reference", ...options });
export const buildGrammar = (cb: (b: base.GrammarBuilder) => void, options: base.GrammarOptions = {}): string =>
  base.buildGrammar(cb, { schemaMode: "reference", ...options });
export { gbnfFormatLiteral, SchemaInfo } from "../../../lib/json-schema/index.js";
