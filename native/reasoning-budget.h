// A per-generation bound on reasoning tokens: after `budget` tokens inside a reasoning block
// (between a start and an end sequence of the plan's reasoning markers) the rest of the block is
// forced closed: an optional message and the first end sequence, decoded in one batch, then the
// model answers. As llama.cpp's reasoning-budget sampler (common/reasoning-budget.cpp) in its
// states; unlike it the forced tokens are not sampled one step each (their logits are not
// needed), a forced token the grammar refuses ends the forcing instead of dead-ending the
// sampler, and the reasoning tokens are counted for the usage.
#pragma once

#include <llama.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lp {

struct ReasoningBudgetParams {
  int32_t budget = -1;                            // < 0: off
  std::vector<std::vector<llama_token>> start;    // any of these opens a block
  std::vector<std::vector<llama_token>> end;      // any of these closes it
  std::vector<llama_token> forced;                // message + the first end sequence
  bool open = false;                              // the prompt ends inside a block
};

class ReasoningBudget {
 public:
  enum class State { Idle, Counting, WaitingUtf8, Forcing, Done };

  explicit ReasoningBudget(const ReasoningBudgetParams& params);

  // Every token the generation emits, with its raw piece; `fromBudget`: one of Remaining()'s. While
  // Forcing, any other token (a sample, the grammar's forced text) keeps the block open and counts
  // as reasoning: only the budget's own tokens move the forced position.
  void Observe(llama_token token, const std::string& piece, bool fromBudget = false);
  // The budget is spent: the next tokens are Forced() instead of sampled.
  bool Forcing() const { return state_ == State::Forcing; }
  // The forced tokens not yet emitted (Observe advances through them).
  std::vector<llama_token> Remaining() const;
  // The grammar refused a forced token: stop forcing, let the model go on.
  void GiveUp() { state_ = State::Done; }
  // Tokens emitted inside reasoning blocks (their markers not included).
  uint32_t reasoningTokens() const { return reasoningTokens_; }
  uint32_t forcedTokens() const { return forcedTokens_; }

 private:
  bool Matches(const std::vector<std::vector<llama_token>>& seqs) const;
  void Open();

  ReasoningBudgetParams p_;
  State state_ = State::Idle;
  int32_t remaining_ = 0;
  size_t forcePos_ = 0;
  size_t window_ = 1;                 // the longest start or end sequence
  std::vector<llama_token> recent_;   // the last window_ tokens
  std::string utf8Tail_;              // bytes of an unfinished UTF-8 character
  uint32_t reasoningTokens_ = 0;
  uint32_t forcedTokens_ = 0;
};

}  // namespace lp
