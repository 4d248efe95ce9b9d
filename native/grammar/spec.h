// What a caller asks of a grammar: GBNF, its start rule, and the lazy triggers.
#pragma once

#include <llama.h>

#include <string>
#include <vector>

namespace lp::grammar {

struct GrammarSpec {
  std::string gbnf;
  std::string root = "root";
  bool lazy = false;
  std::vector<std::string> triggerPatterns;  // regexes (trigger words arrive here already escaped)
  std::vector<llama_token> triggerTokens;
  std::vector<llama_token> prefillTokens;  // accepted before sampling starts (llama.cpp's generation-prompt prefill)
};

}  // namespace lp::grammar
