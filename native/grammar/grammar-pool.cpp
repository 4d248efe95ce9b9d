#include "grammar-pool.h"

namespace lp::grammar {

std::unique_ptr<GrammarState> GrammarPool::Acquire(const llama_vocab* vocab, VocabIndexHolder* holder, const GrammarSpec& spec,
                                                   Failure* error) {
  const std::string key = GrammarState::PoolKey(spec);
  std::unique_ptr<GrammarState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->first == key) {
        state = std::move(it->second);
        idle_.erase(it);
        break;
      }
    }
  }
  if (state) {
    Failure f;
    if (state->Reset(spec, &f)) return state;
    // a state that cannot go back to its start is dropped; a new one says what is wrong, if anything
  }
  return GrammarState::Create(vocab, holder, spec, error);
}

void GrammarPool::Release(std::unique_ptr<GrammarState> state, std::string key) {
  if (!state) return;
  std::lock_guard<std::mutex> lock(mu_);
  idle_.emplace_front(std::move(key), std::move(state));
  size_t bytes = 0;
  size_t kept = 0;
  for (auto it = idle_.begin(); it != idle_.end();) {
    bytes += it->second->MemoryBytes();
    if (kept >= kMaxStates || bytes > kMaxBytes) {
      it = idle_.erase(it);
    } else {
      ++kept;
      ++it;
    }
  }
}

size_t GrammarPool::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

}  // namespace lp::grammar
