// The reasoning budget (reasoning-budget.h).
#include "reasoning-budget.h"

#include <algorithm>

namespace lp {

namespace {

// Whether `bytes` ends inside a UTF-8 character (a lead byte whose continuation has not come).
bool EndsMidCharacter(const std::string& bytes) {
  size_t i = bytes.size();
  size_t cont = 0;
  while (i > 0 && cont < 4) {
    const unsigned char c = static_cast<unsigned char>(bytes[i - 1]);
    if ((c & 0xC0) != 0x80) {
      const size_t need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      return cont < need;
    }
    cont++;
    i--;
  }
  return false;
}

}  // namespace

ReasoningBudget::ReasoningBudget(const ReasoningBudgetParams& params) : p_(params) {
  for (const auto& s : p_.start) window_ = std::max(window_, s.size());
  for (const auto& s : p_.end) window_ = std::max(window_, s.size());
  if (p_.budget >= 0 && p_.open) Open();
}

void ReasoningBudget::Open() {
  recent_.clear();
  utf8Tail_.clear();
  remaining_ = p_.budget;
  state_ = remaining_ <= 0 && !p_.forced.empty() ? State::Forcing : State::Counting;
  forcePos_ = 0;
}

bool ReasoningBudget::Matches(const std::vector<std::vector<llama_token>>& seqs) const {
  for (const auto& s : seqs) {
    if (s.empty() || s.size() > recent_.size()) continue;
    if (std::equal(s.begin(), s.end(), recent_.end() - static_cast<std::ptrdiff_t>(s.size()))) return true;
  }
  return false;
}

std::vector<llama_token> ReasoningBudget::Remaining() const {
  if (state_ != State::Forcing || forcePos_ >= p_.forced.size()) return {};
  return std::vector<llama_token>(p_.forced.begin() + static_cast<std::ptrdiff_t>(forcePos_), p_.forced.end());
}

void ReasoningBudget::Observe(llama_token token, const std::string& piece, bool fromBudget) {
  if (p_.budget < 0) return;
  recent_.push_back(token);
  if (recent_.size() > window_) recent_.erase(recent_.begin());
  switch (state_) {
    case State::Idle:
    case State::Done:
      // Some models open several blocks in one answer: each gets the whole budget.
      if (Matches(p_.start)) Open();
      return;
    case State::Counting:
    case State::WaitingUtf8: {
      if (Matches(p_.end)) {
        state_ = State::Done;
        return;
      }
      reasoningTokens_++;
      utf8Tail_ += piece;
      if (utf8Tail_.size() > 8) utf8Tail_.erase(0, utf8Tail_.size() - 8);
      const bool complete = !EndsMidCharacter(utf8Tail_);
      if (state_ == State::Counting) remaining_--;
      if (remaining_ <= 0) {
        // Never cut a character in half: the forced text follows its last byte.
        state_ = complete ? State::Forcing : State::WaitingUtf8;
        forcePos_ = 0;
        if (p_.forced.empty()) state_ = State::Done;
      }
      return;
    }
    case State::Forcing:
      if (!fromBudget) {
        // Not the budget's text (fast-forward or a draft ran past the point where the budget was
        // spent): still inside the block, unless it closed it by itself.
        if (Matches(p_.end)) {
          state_ = State::Done;
        } else {
          reasoningTokens_++;
        }
        return;
      }
      forcedTokens_++;
      if (++forcePos_ >= p_.forced.size()) state_ = State::Done;
      return;
  }
}

}  // namespace lp
