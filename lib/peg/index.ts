/** The PEG engine: arena, builder, parse, GBNF export, JSON (de)serialization. */
export { PegArena, PegStreamParser } from "./arena.js";
export { PegBuilder, PegParser, buildPegParser, pegBuilder } from "./builder.js";
export { PegAst, type PegAstId, type PegAstNode, type PegAstNodeJson } from "./ast.js";
export { type PegParseOptions, type PegParseResult, type PegParseType } from "./parse.js";
export { type CharRange, type PegNode, type PegNodeId, type PegNodeKind, INVALID_NODE_ID, cleanRuleName, parseCharClass } from "./nodes.js";
export { type PegArenaJson, type PegParserJson } from "./serialize.js";
