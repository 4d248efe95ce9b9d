#include "grammar.h"

#include <regex>
#include <stdexcept>
#include <string>

#include "llama-grammar.h"  // llama.cpp's internal parser: lets us catch its message ourselves
#include "log.h"

namespace lp {
namespace {

// Whitespace and '#' comments, as GBNF allows them before the first rule.
const char* SkipSpaceAndComments(const char* pos) {
  while (*pos) {
    if (*pos == ' ' || *pos == '\t' || *pos == '\r' || *pos == '\n') {
      pos++;
    } else if (*pos == '#') {
      while (*pos && *pos != '\n' && *pos != '\r') pos++;
    } else {
      break;
    }
  }
  return pos;
}

std::string Excerpt(const std::string& message) {
  // llama.cpp's messages end with the rest of the grammar text ("expecting ::= at <rest>"); keep
  // the line where it failed, not the whole remainder.
  size_t nl = message.find('\n');
  std::string out = nl == std::string::npos ? message : message.substr(0, nl);
  if (out.size() > 200) out = out.substr(0, 200) + "...";
  return out;
}

NativeError ParseCheck(const llama_vocab* vocab, const GrammarParams& p) {
  llama_grammar_parser parser(vocab);
  try {
    const char* pos = SkipSpaceAndComments(p.gbnf.c_str());
    while (*pos) pos = parser.parse_rule(pos);
    // Every referenced rule must be defined (a reference alone creates the symbol).
    for (const auto& kv : parser.symbol_ids) {
      if (kv.second >= parser.rules.size() || parser.rules[kv.second].empty()) {
        return {"ERR_GRAMMAR_INVALID", "invalid GBNF grammar: Undefined rule identifier '" + kv.first + "'"};
      }
    }
  } catch (const std::exception& e) {
    return {"ERR_GRAMMAR_INVALID", "invalid GBNF grammar: " + Excerpt(e.what())};
  }
  if (parser.rules.empty()) return {"ERR_GRAMMAR_INVALID", "invalid GBNF grammar: no rules"};
  if (parser.symbol_ids.find(p.root) == parser.symbol_ids.end()) {
    return {"ERR_GRAMMAR_INVALID", "invalid GBNF grammar: grammar does not contain a '" + p.root + "' symbol"};
  }
  return {};
}

}  // namespace

llama_sampler* CreateGrammarSampler(const llama_vocab* vocab, const GrammarParams& p, NativeError* error) {
  *error = ParseCheck(vocab, p);
  if (!error->ok()) return nullptr;
  // llama.cpp compiles trigger patterns with std::regex and would throw from inside its C API.
  for (const auto& pattern : p.triggerPatterns) {
    try {
      std::regex re(pattern);
    } catch (const std::exception& e) {
      *error = {"ERR_GRAMMAR_INVALID", "invalid trigger pattern /" + pattern + "/: " + e.what()};
      return nullptr;
    }
  }
  int32_t nVocab = llama_vocab_n_tokens(vocab);
  for (llama_token t : p.triggerTokens) {
    if (t < 0 || t >= nVocab) {
      *error = {"ERR_GRAMMAR_INVALID", "trigger token " + std::to_string(t) + " is outside the vocabulary"};
      return nullptr;
    }
  }
  LogCapture capture;
  llama_sampler* sampler = nullptr;
  try {
    if (p.lazy) {
      std::vector<const char*> patterns;
      for (const auto& s : p.triggerPatterns) patterns.push_back(s.c_str());
      sampler = llama_sampler_init_grammar_lazy_patterns(vocab, p.gbnf.c_str(), p.root.c_str(), patterns.data(),
                                                         patterns.size(), p.triggerTokens.data(), p.triggerTokens.size());
    } else {
      sampler = llama_sampler_init_grammar(vocab, p.gbnf.c_str(), p.root.c_str());
    }
  } catch (const std::exception& e) {
    *error = {"ERR_GRAMMAR_INVALID", std::string("invalid grammar: ") + e.what()};
    return nullptr;
  }
  if (sampler == nullptr) {
    std::string detail = capture.errors();
    *error = {"ERR_GRAMMAR_INVALID", "invalid GBNF grammar: " + (detail.empty() ? std::string("llama.cpp rejected it") : detail)};
    return nullptr;
  }
  // The prompt already holds the prefill: advance the grammar past it, as llama.cpp's
  // common_sampler_init does with the generation prompt.
  for (size_t i = 0; i < p.prefillTokens.size(); i++) {
    llama_token t = p.prefillTokens[i];
    try {
      if (t < 0 || t >= nVocab) throw std::runtime_error("token outside the vocabulary");
      llama_sampler_accept(sampler, t);
    } catch (const std::exception& e) {
      llama_sampler_free(sampler);
      *error = {"ERR_GRAMMAR_INVALID", "the grammar does not accept its prefill at token " + std::to_string(i) + " (" + std::to_string(t) + "): " + e.what()};
      return nullptr;
    }
  }
  return sampler;
}

}  // namespace lp
