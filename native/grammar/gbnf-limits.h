// Checks that keep llama.cpp's GBNF parser and grammar setup inside bounded stack and time.
// llama.cpp recurses once per nested group while parsing, once per rule of a left-reference chain
// while looking for left recursion (and revisits shared rules, which is exponential on a DAG),
// and copies a repeated item once per repetition. Inputs past these limits are rejected with a
// message naming the limit (ERR_GRAMMAR_INVALID), before llama.cpp sees them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "llama-grammar.h"

namespace lp::grammar {

struct GbnfLimits {
  uint32_t maxNesting = 1000;             // nested ( ) groups
  uint64_t maxElements = 8u << 20;        // grammar elements after repetitions are expanded
  uint32_t maxLeftChain = 2000;           // rules in a chain of leftmost references
  uint64_t maxLeftRecursionWork = 50u << 20;  // rule elements llama.cpp's left-recursion check scans
};

// On the text, before parsing. "" when within limits, else the reason (with a byte offset).
std::string CheckGbnfText(const std::string& gbnf, const GbnfLimits& limits = {});

// On the parsed rules, before llama_grammar_init_impl: left recursion (reported here, named),
// and the depth and work of llama.cpp's own check. "" when fine.
std::string CheckGbnfRules(const llama_grammar_rules& rules, const std::map<std::string, uint32_t>& symbols,
                           const GbnfLimits& limits = {});

}  // namespace lp::grammar
