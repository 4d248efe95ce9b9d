#include "checkpoints.h"

#include <algorithm>

namespace lp {

namespace {
constexpr llama_state_seq_flags kFlags = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY;
}

void CheckpointStore::Configure(size_t sequences, uint32_t perSequence, size_t budgetBytes) {
  seqs_.assign(sequences, {});
  perSequence_ = perSequence;
  budget_ = budgetBytes;
  bytes_ = 0;
}

bool CheckpointStore::Take(llama_context* ctx, int32_t seq, size_t nTokens) {
  if (!enabled() || nTokens == 0) return false;
  std::vector<Checkpoint>& list = seqs_[static_cast<size_t>(seq)];
  const size_t size = llama_state_seq_get_size_ext(ctx, seq, kFlags);
  if (size == 0 || size > budget_) return false;
  Checkpoint cp;
  cp.nTokens = nTokens;
  cp.data.resize(size);
  if (llama_state_seq_get_data_ext(ctx, cp.data.data(), size, seq, kFlags) != size) return false;
  DropAbove(seq, nTokens - 1);  // one at this point (and none after it: they describe other tokens)
  while (list.size() >= perSequence_) {
    bytes_ -= list.front().data.size();
    list.erase(list.begin());
  }
  while (bytes_ + size > budget_) EvictOldest();
  cp.order = next_++;
  bytes_ += size;
  list.push_back(std::move(cp));
  return true;
}

const Checkpoint* CheckpointStore::Newest(int32_t seq, size_t limit) const {
  const std::vector<Checkpoint>& list = seqs_[static_cast<size_t>(seq)];
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    if (it->nTokens <= limit) return &*it;
  }
  return nullptr;
}

bool CheckpointStore::Restore(llama_context* ctx, int32_t seq, const Checkpoint& cp) const {
  return llama_state_seq_set_data_ext(ctx, cp.data.data(), cp.data.size(), seq, kFlags) == cp.data.size();
}

void CheckpointStore::DropAbove(int32_t seq, size_t nTokens) {
  std::vector<Checkpoint>& list = seqs_[static_cast<size_t>(seq)];
  while (!list.empty() && list.back().nTokens > nTokens) {
    bytes_ -= list.back().data.size();
    list.pop_back();
  }
}

void CheckpointStore::Clear(int32_t seq) { DropAbove(seq, 0); }

void CheckpointStore::EvictOldest() {
  std::vector<Checkpoint>* oldest = nullptr;
  size_t at = 0;
  for (auto& list : seqs_) {
    for (size_t i = 0; i < list.size(); i++) {
      if (oldest == nullptr || list[i].order < (*oldest)[at].order) {
        oldest = &list;
        at = i;
      }
    }
  }
  if (oldest == nullptr) return;
  bytes_ -= (*oldest)[at].data.size();
  oldest->erase(oldest->begin() + static_cast<std::ptrdiff_t>(at));
}

}  // namespace lp
