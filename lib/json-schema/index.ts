export { buildGrammar, compileJsonSchema, jsonSchemaToGbnf } from "./builder.js";
export type { CompileOptions, CompiledSchema, GrammarBuilder, GrammarOptions, PropertyOrder, SchemaMode } from "./builder.js";
export type { JsonWhitespace } from "./layout.js";
export { checkSchemaDepth, MAX_JSON_DEPTH } from "./depth.js";
export { gbnfFormatLiteral } from "./literal.js";
export type { SchemaWarning, UnsupportedMode } from "./report.js";
export { SchemaInfo } from "./schema-info.js";
