// Builds llama.cpp grammar samplers, reporting llama.cpp's own parse message on failure instead
// of letting it go to stderr (llama.cpp prints parse errors with fprintf, not through its log).
#pragma once

#include <llama.h>

#include <string>
#include <vector>

#include "common.h"

namespace lp {

struct GrammarParams {
  std::string gbnf;
  std::string root = "root";
  bool lazy = false;
  std::vector<std::string> triggerPatterns;  // regexes (trigger words arrive here already escaped)
  std::vector<llama_token> triggerTokens;
  std::vector<llama_token> prefillTokens;  // accepted before sampling starts (llama.cpp's generation-prompt prefill)
};

// Returns the sampler, or nullptr with *error set (code ERR_GRAMMAR_INVALID).
llama_sampler* CreateGrammarSampler(const llama_vocab* vocab, const GrammarParams& params, NativeError* error);

}  // namespace lp
