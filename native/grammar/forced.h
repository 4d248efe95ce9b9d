// Forced text: the bytes every continuation the grammar admits shares, from a set of stacks up to
// its first choice point (what llguidance calls fast-forward tokens). llama.cpp has no counterpart;
// the steps are its own (llama_grammar_accept_chr over every stack, via StackEngine::Next).
#pragma once

#include <cstdint>
#include <llama.h>

#include <string>
#include <vector>

#include "stacks.h"

namespace lp::grammar {

// The one code point every stack of `set` admits, or 0 when there is a choice: a stack that is
// empty (the grammar may end), a TOKEN element on top, or a character element that admits more
// than one code point (a range, a negation, any, alternatives with different values).
uint32_t ForcedCodePoint(const StackEngine& engine, SetId set);

// Appends the UTF-8 bytes of the code points forced from `set` on (at most maxBytes, whole
// characters only) and returns the set after them (`set` itself when nothing is forced).
SetId ForcedRun(StackEngine* engine, SetId set, size_t maxBytes, std::string* out);

// The tokens that spell `forced` after a token whose piece is `before`: the tokenizer's own split
// of before + forced when it has a boundary right after `before`, else its split of forced alone;
// empty when neither spells exactly `forced`. `renderable(t)`: token t may be used (a control
// token only where the generation renders control text).
std::vector<llama_token> TokenizeForced(const llama_vocab* vocab, const std::string& before, const std::string& forced,
                                        bool (*renderable)(const llama_vocab*, llama_token, const void*), const void* arg);

}  // namespace lp::grammar
