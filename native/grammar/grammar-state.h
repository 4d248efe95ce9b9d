// One grammar being followed by one sequence: llama.cpp's parsed rules, the current stacks in our
// interned form, the mask engine, and the lazy-trigger state. Does what llama.cpp's grammar
// sampler does (llama_grammar_apply_impl / llama_grammar_accept_impl, lazy patterns and tokens
// included), without its full-vocabulary pass, its std::regex, or its unbounded recursion.
#pragma once

#include <llama.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "failure.h"
#include "mask.h"
#include "positions.h"
#include "stacks.h"
#include "token-bits.h"
#include "spec.h"
#include "triggers.h"
#include "vocab-index.h"

namespace lp::grammar {

struct GrammarStats {
  uint64_t fullMasks = 0;       // masks computed by the engine
  uint64_t referenceMasks = 0;  // llama.cpp's full pass (reference mode or fallback)
  uint64_t resets = 0;          // engine memory resets
  double maskMs = 0;
  double classesMs = 0;  // position classes (once per grammar, at the first mask)
};

class GrammarState {
 public:
  // Parses and checks the grammar (ERR_GRAMMAR_INVALID on failure). `holder` shares the vocabulary
  // index across samplers of one model; nullptr builds a private one. The index is built at the
  // first mask, off the caller's thread when that is the generation thread.
  static std::unique_ptr<GrammarState> Create(const llama_vocab* vocab, VocabIndexHolder* holder, const GrammarSpec& spec,
                                              Failure* error);
  // A state back at its start for `spec` (same GBNF, root and laziness as it was created with:
  // the caller's pool key), keeping what it learned: interned stacks, position classes and the mask
  // cache, so the next generation with this grammar pays no cold first mask. The triggers and the
  // prefill are `spec`'s.
  bool Reset(const GrammarSpec& spec, Failure* error);
  // What a pooled state must match to be reset for `spec` (the prefill is replayed, not matched).
  static std::string PoolKey(const GrammarSpec& spec);
  // Memory held by the mask cache and the interning tables (for the pool's budget).
  size_t MemoryBytes() const { return (mask_ ? mask_->MemoryBytes() : 0) + (engine_ ? engine_->MemoryBytes() : 0); }
  ~GrammarState();
  GrammarState(const GrammarState&) = delete;
  GrammarState& operator=(const GrammarState&) = delete;

  // A lazy grammar that has not seen its trigger yet constrains nothing.
  bool awaitingTrigger() const { return awaiting_; }

  // Is `token` admitted now (llama_grammar_apply_impl on that one candidate)?
  bool Admits(llama_token token, Failure* error);
  // Sets every candidate the grammar rejects to -inf, as llama_grammar_apply_impl does.
  // `reference`: llama.cpp's own pass instead of the engine.
  bool Apply(llama_token_data_array* cur, bool reference, Failure* error);
  // The admitted set over the whole vocabulary.
  bool Mask(TokenBits* out, bool reference, Failure* error);
  // llama_grammar_accept_impl: trigger detection while lazy, then the grammar.
  bool Accept(llama_token token, Failure* error);

  // Forced text (forced.h): the bytes every continuation admitted from here shares, up to the first
  // choice point, at most maxBytes. Empty while a lazy grammar waits for its trigger, inside a
  // partial character, and for grammars with TOKEN elements (decided by id, not by text).
  std::string ForcedBytes(size_t maxBytes);

  // How many leading tokens of draft[0, n) the grammar takes one after the other from here, walked
  // on a copy of the state (speculative drafts); with stopAtForced, the walk ends after a token
  // that leaves forced text next (fast-forward queues it there, and VerifyDraft stops). All of
  // them while a lazy grammar waits for its trigger (the sampler checks each as it comes). -1 for
  // grammars with TOKEN elements (the caller walks llama.cpp's stacks instead).
  ptrdiff_t DraftPrefix(const llama_token* draft, size_t n, bool stopAtForced);

  const GrammarStats& stats() const { return stats_; }
  const MaskStats* maskStats() const { return mask_ ? &mask_->stats() : nullptr; }
  // Builds the position cache for every grammar position now (maxStates == 0), or for every state
  // reachable within `maxStates` sets from the current one (eager warm-up; benchmarks, callers
  // that want a flat first mask).
  bool Warm(size_t maxStates, Failure* error);
  // Test hooks: the stacks as llama.cpp vectors, and the llama.cpp grammar with them written back.
  std::vector<llama_grammar_stack> Stacks();
  llama_grammar* SyncedLlamaGrammar();
  std::pair<uint32_t, int> partial() const { return {partialValue_, partialRemain_}; }

 private:
  GrammarState() = default;
  bool EnsureIndex(Failure* error);
  bool AcceptToken(llama_token token, const std::string& piece, Failure* error);
  bool AdmitsByLlama(const llama_token* ids, size_t n, std::vector<uint8_t>* verdict);
  bool ReferenceMask(TokenBits* out);
  void SyncLlama();
  void MaybeReset();
  bool EngineError(Failure* error);

  const llama_vocab* vocab_ = nullptr;
  VocabIndexHolder* holder_ = nullptr;
  std::unique_ptr<VocabIndexHolder> ownHolder_;
  std::shared_ptr<const VocabIndex> index_;
  llama_grammar* grammar_ = nullptr;  // rules; its stacks are written back only for llama.cpp's passes
  size_t rootRule_ = 0;
  bool llamaStale_ = true;
  bool hasTokenElements_ = false;
  std::unique_ptr<StackEngine> engine_;
  std::unique_ptr<PositionClasses> classes_;
  std::unique_ptr<MaskEngine> mask_;
  SetId set_ = StackEngine::kDead;
  std::vector<llama_grammar_stack> start_;  // the stacks before the prefill (Reset)
  uint32_t partialValue_ = 0;
  int partialRemain_ = 0;

  bool awaiting_ = false;
  std::vector<llama_token> triggerTokens_;
  std::unique_ptr<TriggerMatcher> triggers_;
  std::vector<std::pair<llama_token, std::pair<size_t, size_t>>> positions_;

  std::vector<llama_token> byId_;
  std::vector<llama_token_data> scratch_;
  TokenBits applyBits_;
  GrammarStats stats_;
};

}  // namespace lp::grammar
