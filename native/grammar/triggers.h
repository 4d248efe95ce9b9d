// Lazy-grammar trigger detection with llama.cpp's semantics and a per-token cost proportional to
// the new bytes: plain words (the escaped trigger words) in one Aho-Corasick automaton, the other
// patterns as compiled byte automata (regex.h), both advanced over each piece as it arrives.
//
// llama.cpp (llama_grammar_accept_impl while awaiting a trigger): append the piece to the buffer,
// then for each pattern in order `find` it in the whole buffer (regex_match first for patterns
// written ^...$, then regex_search); the first pattern that matches fires, and the grammar starts
// at its first non-empty capture group, or at the match when none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "regex.h"

namespace lp::grammar {

class WordAutomaton {
 public:
  // words[i] belongs to pattern index ids[i].
  WordAutomaton(const std::vector<std::string>& words, const std::vector<uint32_t>& ids);
  // Runs over text[from..]; keeps the lowest pattern id that ended in it and where it started.
  void Feed(const std::string& text, size_t from, uint32_t* bestId, size_t* bestStart);
  size_t states() const { return out_.size(); }

 private:
  std::vector<uint32_t> delta_;      // state * classes + class -> state
  std::vector<uint32_t> out_;        // per state: lowest pattern id ending here (UINT32_MAX none)
  std::vector<uint32_t> outLength_;  // its word length
  uint8_t cls_[256] = {};
  uint32_t classes_ = 1;
  uint32_t state_ = 0;
};

class TriggerMatcher {
 public:
  // nullptr with *error set when a pattern is outside the supported subset (or too large).
  static std::unique_ptr<TriggerMatcher> Create(const std::vector<std::string>& patterns, std::string* error);

  // Appends the piece. True when a pattern now matches the buffer; *start is where the grammar
  // begins (a byte offset into buffer()).
  bool Feed(const std::string& piece, size_t* start);
  const std::string& buffer() const { return buffer_; }
  size_t patternCount() const { return patterns_; }

 private:
  struct Pattern {
    uint32_t id;
    std::unique_ptr<RegexProgram> search;
    std::unique_ptr<RegexProgram> full;  // for ^...$ patterns: regex_match is tried first
    std::unique_ptr<RegexSearch> searchVm;
    std::unique_ptr<RegexSearch> fullVm;
  };
  static size_t StartOf(const std::vector<int64_t>& slots);

  std::string buffer_;
  std::unique_ptr<WordAutomaton> words_;
  std::vector<Pattern> regexes_;  // by id
  size_t patterns_ = 0;
  std::vector<int64_t> slots_;
};

}  // namespace lp::grammar
