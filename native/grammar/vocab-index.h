// The vocabulary as the grammar sees it: every token's piece (llama.cpp's cached piece, control
// tokens rendered as their text) in a byte trie laid out in depth-first order, so a walk is a
// forward scan that skips a whole subtree with one jump. Built once per model, shared read-only.
#pragma once

#include <llama.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lp::grammar {

enum class TokenKind : uint8_t {
  kTrie,      // in the trie: decided by the walk
  kEog,       // end of generation: admitted exactly when some stack is empty (never by text)
  kRejected,  // empty piece or leading NUL: llama.cpp rejects it under every grammar
  kSlow,      // decided by llama.cpp's own apply (pieces whose decoding can yield code point 0)
};

class VocabIndex {
 public:
  static std::shared_ptr<const VocabIndex> Build(const llama_vocab* vocab);

  const llama_vocab* vocab = nullptr;
  int32_t nVocab = 0;
  std::vector<TokenKind> kind;
  std::vector<llama_token> slow;  // kind == kSlow
  std::vector<llama_token> eog;   // kind == kEog

  // Trie nodes in preorder; node 0 is the root (empty prefix). `next[i]` is the index after i's
  // subtree; `depth[i]` its prefix length; `byte[i]` the edge byte into it; tokens whose piece
  // (cut at its first NUL) is exactly that prefix are tokens[tokenStart[i] .. tokenStart[i+1]).
  std::vector<uint8_t> byte;
  std::vector<uint16_t> depth;
  std::vector<uint32_t> next;
  std::vector<uint32_t> tokenStart;
  std::vector<llama_token> tokens;
  // The bytes strictly below each node (its subtree without the node's own byte): bit c of
  // (lo, hi) for ASCII byte c (1-127; pieces hold no NUL), and bit 0 of lo for any byte >= 0x80.
  // A walk in a state that loops on every one of them admits the whole subtree (mask.cpp).
  // `belowOdd`: below a node that ends a whole character, some piece goes on with bytes that are
  // not whole characters of code points >= 0x80 the plain way: kOddBytes for a stray
  // continuation byte, or an overlong or out-of-range lead (decided by the walk only);
  // kOddPartial for a piece ending inside a character (decided by llama.cpp's partial check).
  static constexpr uint8_t kOddBytes = 1, kOddPartial = 2;
  struct Bytes {
    uint64_t lo = 0, hi = 0;
  };
  std::vector<Bytes> below;
  std::vector<uint8_t> belowOdd;
  std::vector<uint16_t> height;  // how many bytes the longest piece goes on below the node
  uint16_t maxDepth = 0;
  double buildMs = 0;

  uint32_t nodes() const { return static_cast<uint32_t>(byte.size()); }
  // The node a trie token ends at (for checking one token).
  std::vector<uint32_t> nodeOf;  // per token; UINT32_MAX when not in the trie
};

class GrammarPool;
class SharedEntries;

// Lazily built, shared by every sampler of one model (lives in ModelCore).
class VocabIndexHolder {
 public:
  std::shared_ptr<const VocabIndex> Get(const llama_vocab* vocab);
  // The model's pool of finished grammar states (grammar-pool.h); samplers keep it alive.
  std::shared_ptr<GrammarPool> Pool();
  // The model's mask entries shared between grammars (shared-entries.h); nullptr when sharing is
  // off (SetSharing: benchmarks that measure every grammar cold).
  std::shared_ptr<SharedEntries> Shared();
  void SetSharing(bool on);

 private:
  std::mutex mu_;
  std::shared_ptr<const VocabIndex> index_;
  std::shared_ptr<GrammarPool> pool_;
  std::shared_ptr<SharedEntries> shared_;
  bool sharing_ = true;
};

}  // namespace lp::grammar
