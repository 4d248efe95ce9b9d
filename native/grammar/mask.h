// The mask engine: which tokens the grammar admits in a state, by walking the vocabulary trie
// with the state's stack set (a subtree is dropped at its first rejected byte), and with a cache
// per grammar position (the top frames of a stack) of what that position decides by itself,
// whatever lies below it (XGrammar's context-independent tokens). At run time only the rest, the
// subtrees where a token outlives the cached frames and continues into the context, is walked.
//
// Tokens llama.cpp decides by something other than their text stay with the caller: end of
// generation, the vocabulary's "slow" tokens, and the ids of TOKEN elements met on the way
// (llama.cpp checks those by id, in a way a text walk cannot see).
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <unordered_map>
#include <vector>

#include "positions.h"
#include "shared-entries.h"
#include "stacks.h"
#include "token-bits.h"
#include "vocab-index.h"

namespace lp::grammar {

struct MaskStats {
  uint64_t masks = 0;
  uint64_t entries = 0;         // cache entries built
  uint64_t entryNodes = 0;      // trie nodes visited building them
  uint64_t stubs = 0;           // walks stopped early for a deeper key (their nodes are in entryNodes)
  uint64_t shallowEntries = 0;  // entries of one-frame keys (of `entries`)
  uint64_t shallowNodes = 0;    // trie nodes visited building them and their stubs (of `entryNodes`)
  uint64_t runtimeNodes = 0;    // trie nodes visited at run time (continuations, partial starts)
  uint64_t continuations = 0;   // subtree walks into a context
  uint64_t memoHits = 0;        // an entry's continuations into a context answered from the memo
  uint64_t sharedHits = 0;      // entries taken from another grammar's (shared-entries.h)
  uint64_t localHits = 0;       // entries taken from another position of this grammar, same within the horizon
  double entryMs = 0;           // time spent building entries
};

class MaskEngine {
 public:
  enum class Result { kOk, kFallback, kError };

  // `shared`: the model's table of entries shared between grammars (nullptr: none).
  MaskEngine(std::shared_ptr<const VocabIndex> vocab, StackEngine* engine, const PositionClasses* positions,
             std::shared_ptr<SharedEntries> shared = nullptr);

  // Admitted trie tokens of the state (stack set + the partial character carried from the last
  // token) into *out (cleared first). TOKEN ids met are appended to *byId. kFallback: the state
  // needs llama.cpp's own full pass (a TOKEN_NOT element, or a carried partial that decodes to 0).
  Result Compute(SetId set, Utf8Walk carried, TokenBits* out, std::vector<llama_token>* byId);

  // Builds the cache entries of every stack in `set` now. kError on a limit.
  Result Warm(SetId set);
  // Builds the entry of every grammar position: each terminal with each frame that can lie below
  // its rule (deeper where an entry asks for it), XGrammar's precomputation. kError on a limit.
  Result WarmAll(const llama_grammar_rules& rules, const Elem* root);

  // The engine was reset (ids changed): forget id-keyed lookups, keep the entries.
  void OnEngineReset(StackEngine* engine);

  const MaskStats& stats() const { return stats_; }
  size_t entryCount() const { return entries_.size(); }
  size_t MemoryBytes() const { return entryBytes_ + memoBytes_; }

  // Frames in a cache key, first try, and the most a key grows to when a position keeps
  // reaching its context (each deeper key is tried when the shallower one had too many
  // continuations).
  static constexpr int kFirstKeyFrames = 1;
  static constexpr int kMaxKeyFrames = 6;
  static constexpr size_t kDeepenAt = 256;

 private:
  using Entry = MaskEntry;
  // The top frames of a stack, compared by position class (positions.h); `frames` are the
  // elements of the first stack seen with this key, the ones an entry is built from.
  struct Key {
    std::array<uint32_t, kMaxKeyFrames> classes{};
    std::array<const Elem*, kMaxKeyFrames> frames{};
    int n = 0;
    bool operator==(const Key& o) const { return n == o.n && classes == o.classes; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct TokenTops {
    std::vector<llama_token> ids;
    bool tokenNot = false;
  };

  // `keepStubs`: a stub may be returned even where the stack ends (the eager warm-up goes on
  // below it itself).
  const Entry* EntryFor(StackId s, StackId* below, bool keepStubs = false);
  // The entry of `key` not yet in this engine: from the shared table, or built (from `parent`,
  // the entry one frame shallower, where it is whole) and offered to the table.
  const Entry* Obtain(const Key& key, const Entry* parent, bool allowStub);
  // The key written out canonically (shared-entries.h); false when it reaches too large a grammar.
  // Frames from `canonicalFrames` on are written as their addresses (*local: the key is this
  // grammar's only).
  bool SharedKey(const Key& key, int canonicalFrames, std::string* out, bool* local);
  // The entry of `key` by a walk of the whole trie. `allowStub`: stop as soon as the walk reaches
  // the context at more than kDeepenAt nodes, leaving a stub (the deeper key is then walked
  // instead of derived, one walk in place of two).
  const Entry* Build(const Key& key, bool allowStub);
  // The entry of `key` (one frame more than `parent`'s key) from the parent's: its tokens, plus
  // what its continuations admit when the next frame down is the context.
  const Entry* Derive(const Entry& parent, const Key& key);
  const Entry* Store(const Key& key, std::unique_ptr<Entry> entry, const TokenTops& tops, uint64_t visited,
               std::chrono::steady_clock::time_point t0);
  // Walks the subtree under `root` from state (set, utf8): marks admitted tokens in `out` (or,
  // with `list`, appends them there instead), reports bottom nodes into `bottoms` and TOKEN tops
  // into `tops`.
  bool Walk(uint32_t root, SetId set, Utf8Walk utf8, TokenBits* out, std::vector<uint32_t>* bottoms, TokenTops* tops,
            uint64_t* visited, std::vector<llama_token>* list = nullptr);
  void NoteTokenTops(SetId set, TokenTops* tops);

  std::shared_ptr<const VocabIndex> vocab_;
  StackEngine* engine_;
  const PositionClasses* positions_;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> entries_;
  std::shared_ptr<SharedEntries> shared_;
  // Keys written out with their lower frames as addresses (Obtain), this grammar's own.
  std::unordered_map<std::string, std::shared_ptr<const Entry>> local_;
  std::unordered_map<uint32_t, uint32_t> sharedRuleIds_;  // SharedKey's scratch
  std::vector<uint32_t> sharedRules_;
  std::vector<uint32_t> sharedRuleDist_;
  // The fewest characters each rule derives (SharedKey's distances), found on first use.
  void ComputeMinLengths();
  uint32_t ElementCost(const Elem& e) const;
  static constexpr int kMinLengthRounds = 64;
  std::vector<uint32_t> minLen_;
  bool minLenKnown_ = false;
  size_t entryBytes_ = 0;
  // What an entry's continuations admit when the context is a given set: a set with many stacks
  // (after a member of an object with hundreds of optional properties, one stack per property
  // that may come next) walked them all again at every visit. Only for entries with at least
  // kMemoContinuations continuations; keyed by set id, so cleared when the engine resets.
  static constexpr size_t kMemoContinuations = 16;
  static constexpr size_t kMemoBudget = 32u << 20;  // bytes; past it the memo starts over
  struct Walked {
    std::vector<llama_token> accepted;  // (may repeat a token: walks from nested nodes); or:
    std::vector<uint64_t> bits;         // when there are many
    std::vector<llama_token> byId;
    bool tokenNot = false;
    bool kept = false;  // false: seen once, nothing kept yet
  };
  struct MemoKeyHash {
    size_t operator()(const std::pair<const Entry*, SetId>& k) const;
  };
  std::unordered_map<std::pair<const Entry*, SetId>, Walked, MemoKeyHash> memo_;
  size_t memoBytes_ = 0;
  struct WalkFrame {
    SetId set;
    Utf8Walk utf8;
  };
  std::vector<WalkFrame> frames_;
  // (entry, context) pairs one Compute has added (kDead: the entry's own tokens)
  static constexpr size_t kMaxApplied = 64;
  std::vector<std::pair<const Entry*, SetId>> applied_;
  // Per set: the set most ASCII characters step it to (itself where it loops), and the
  // characters that do (bit c of lo/hi as in VocabIndex::Bytes; bit 0: every code point >= 0x80
  // does too). kDead where no character steps it. Found on first use.
  // `partial`: a character cut short past ASCII is admitted in this set whatever its bytes (one
  // of its stacks is at a negated class that excludes ASCII characters only, so llama.cpp's
  // partial check passes every such range).
  struct Uniform {
    SetId to = StackEngine::kDead;
    VocabIndex::Bytes chars;
    bool partial = false;
  };
  const Uniform& UniformOf(SetId set);
  std::vector<Uniform> uniform_;
  std::vector<uint8_t> uniformKnown_;
  TokenBits scratch_;
  size_t bottomBudget_ = 0;  // 0: none; else Walk stops once it found more bottoms (walkStopped_)
  bool walkStopped_ = false;
  MaskStats stats_;
};

}  // namespace lp::grammar
