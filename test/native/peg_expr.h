// The "builder expression" language: a JSON S-expression that names common_peg_parser_builder
// (and common_chat_peg_builder) calls, so the TypeScript tests can ask the reference to make the
// same builder calls they make in TS. The language is documented in test/support/README.md.
#pragma once

#include "chat-peg-parser.h"
#include "json.h"
#include "peg-parser.h"

// Builds an arena from `expr`: evaluates it with a fresh builder, sets the result as root and
// calls build() (which resolves refs). Throws harness_error on a malformed expression.
common_peg_arena peg_build_from_expr(const common_json & expr);

// Returns the arena from a request: `arena` (to_json() object or its save() text) or `expr`.
common_peg_arena peg_arena_from_request(const common_json & req);

// Serializes an arena for answers: {arena: to_json(), arena_text: save()}; arena_text keeps
// integers (the no-root id is 2^64-1) that JavaScript numbers cannot hold exactly.
void peg_put_arena(common_json & result, const common_peg_arena & arena);
