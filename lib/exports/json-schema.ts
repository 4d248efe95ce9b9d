/** `llamapeg/json-schema`: JSON Schema to GBNF (llama.cpp's converter, with the departures in docs/json-schema.md). */
export { jsonSchemaToGbnf, compileJsonSchema, buildGrammar, gbnfFormatLiteral, SchemaInfo } from "../json-schema/index.js";
export type { CompileOptions, CompiledSchema, GrammarBuilder, GrammarOptions, JsonWhitespace, PropertyOrder, SchemaMode, SchemaWarning, UnsupportedMode } from "../json-schema/index.js";
