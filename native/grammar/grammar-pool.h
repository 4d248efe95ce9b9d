// Grammar states of finished generations, kept per model so that the next generation with the same
// grammar (an agent's next turn, the next request with the same tools or schema) starts from a
// state that already has its position classes and mask cache: no cold first mask. A state is
// owned by one generation at a time; the pool hands it over under a lock.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "failure.h"
#include "grammar-state.h"
#include "spec.h"

namespace lp::grammar {

class GrammarPool {
 public:
  // A state for `spec`: a pooled one reset to its start when one matches, else a new one.
  std::unique_ptr<GrammarState> Acquire(const llama_vocab* vocab, VocabIndexHolder* holder, const GrammarSpec& spec, Failure* error);
  // Keeps a finished generation's state (the oldest go first past the limits).
  void Release(std::unique_ptr<GrammarState> state, std::string key);

  size_t size();

  // Idle states kept per model, and their memory: past either, the least recently released go
  // (an Electron app should not hold hundreds of MiB for grammars it may not use again).
  static constexpr size_t kMaxStates = 8;
  static constexpr size_t kMaxBytes = 64u << 20;

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, std::unique_ptr<GrammarState>>> idle_;  // most recent first
};

}  // namespace lp::grammar
