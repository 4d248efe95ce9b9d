export { buildGrammar, compileJsonSchema, jsonSchemaToGbnf } from "./builder.js";
export type { CompileOptions, CompiledSchema, GrammarBuilder, GrammarOptions } from "./builder.js";
export { gbnfFormatLiteral } from "./literal.js";
export type { SchemaWarning, UnsupportedMode } from "./report.js";
export { SchemaInfo } from "./schema-info.js";
