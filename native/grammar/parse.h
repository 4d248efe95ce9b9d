// GBNF text -> llama.cpp grammar (rules and initial stacks), with our limits checked first so that
// llama.cpp's recursive parser and left-recursion check stay bounded (gbnf-limits.h), and with
// llama.cpp's own parse message on failure (it prints those to stderr instead of returning them).
#pragma once

#include <llama.h>

#include "failure.h"
#include "llama-grammar.h"
#include "spec.h"

namespace lp::grammar {

// A non-lazy llama_grammar (free with llama_grammar_free_impl), or nullptr with *failure set
// (ERR_GRAMMAR_INVALID). *rootRule: the index of the start rule.
llama_grammar* ParseGrammar(const llama_vocab* vocab, const GrammarSpec& spec, Failure* failure, size_t* rootRule = nullptr);

}  // namespace lp::grammar
