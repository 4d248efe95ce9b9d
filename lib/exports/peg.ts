/**
 * `llamapeg/peg`: the PEG engine (arena, builder, parse of partial input, GBNF export, the JSON
 * shape llama.cpp's arena uses) and what it takes to write an output format of your own: the chat
 * tree builder and its semantic tags, a plan around a hand-built tree, message deltas, and
 * overrides of a template analysis.
 */
export { PegArena, PegStreamParser, PegBuilder, PegParser, pegBuilder, buildPegParser } from "../peg/index.js";
export type { PegParseOptions, PegParseResult, PegParseType, PegAst, PegAstId, PegAstNode, PegArenaJson } from "../peg/index.js";
export { ChatPegBuilder, chatPegBuilder, buildChatPegParser } from "../chat/grammar/builder.js";
export { TAG, type ChatTag } from "../chat/tags.js";
export { chatPlan, type ChatPlan, type ChatParser, type GrammarTrigger } from "../chat/plan.js";
export { diffMessages, applyDeltas } from "../chat/diff.js";
export { withOverrides } from "../chat/analysis/index.js";
