// Per-sequence state checkpoints for memories that cannot roll back by trimming: hybrid and
// recurrent models (their recurrent state exists only for the last token) and sliding-window
// attention without swa_full (cells that left the window are gone). A checkpoint is the
// sequence's partial state (llama_state_seq_get_data_ext with LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY:
// the recurrent or SWA part; the full-attention cells still trim) after its first nTokens tokens.
// Mirrors llama-server's context checkpoints (tools/server/server-context.cpp, create_checkpoint
// and the restore in its prompt admission): a bounded number per sequence, a byte budget for the
// whole context, oldest evicted first. Loop thread only (the llama_context's owner).
#pragma once

#include <llama.h>

#include <cstdint>
#include <vector>

namespace lp {

struct Checkpoint {
  size_t nTokens = 0;        // the state after this many of the sequence's tokens
  uint64_t order = 0;        // taken order, for eviction across sequences
  std::vector<uint8_t> data;
};

class CheckpointStore {
 public:
  void Configure(size_t sequences, uint32_t perSequence, size_t budgetBytes);
  bool enabled() const { return perSequence_ > 0 && budget_ > 0; }
  // Snapshot of `seq` after nTokens tokens (what its cells hold now). False when disabled, too
  // large for the budget, or llama.cpp could not write it. One per nTokens: a second replaces it.
  bool Take(llama_context* ctx, int32_t seq, size_t nTokens);
  // The newest checkpoint of `seq` at or before `limit` tokens (nTokens >= 1), or null.
  const Checkpoint* Newest(int32_t seq, size_t limit) const;
  // Loads it into `seq`'s partial state. False (the partial state then cleared) on failure.
  bool Restore(llama_context* ctx, int32_t seq, const Checkpoint& cp) const;
  // Checkpoints past the sequence's common prefix no longer describe its tokens.
  void DropAbove(int32_t seq, size_t nTokens);
  void Clear(int32_t seq);
  size_t bytes() const { return bytes_; }
  size_t count(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].size(); }

 private:
  void EvictOldest();

  std::vector<std::vector<Checkpoint>> seqs_;  // per sequence, ordered by nTokens
  uint32_t perSequence_ = 0;
  size_t budget_ = 0, bytes_ = 0;
  uint64_t next_ = 0;
};

}  // namespace lp
