#include "vocab-index.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "grammar-pool.h"
#include "shared-entries.h"
#include "llama-vocab.h"  // the same cached pieces llama_grammar_apply_impl reads

namespace lp::grammar {
namespace {

// A lead byte whose value bits are all zero (C0, E0, F0) followed by a byte whose low six bits
// are zero completes code point 0 in llama.cpp's decoder, which then treats the rest of the
// token as absent. Such tokens are left to llama.cpp itself.
bool CanDecodeToZero(const std::string& piece) {
  for (size_t i = 0; i + 1 < piece.size(); i++) {
    uint8_t b = static_cast<uint8_t>(piece[i]);
    if ((b == 0xC0 || b == 0xE0 || b == 0xF0) && (static_cast<uint8_t>(piece[i + 1]) & 0x3F) == 0) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<const VocabIndex> VocabIndex::Build(const llama_vocab* vocab) {
  auto t0 = std::chrono::steady_clock::now();
  auto index = std::make_shared<VocabIndex>();
  VocabIndex& v = *index;
  v.vocab = vocab;
  v.nVocab = llama_vocab_n_tokens(vocab);
  v.kind.assign(static_cast<size_t>(v.nVocab), TokenKind::kTrie);
  v.nodeOf.assign(static_cast<size_t>(v.nVocab), UINT32_MAX);

  // Pieces cut at their first NUL: llama.cpp decodes a piece as a C string.
  std::vector<const char*> data(static_cast<size_t>(v.nVocab), nullptr);
  std::vector<uint32_t> length(static_cast<size_t>(v.nVocab), 0);
  std::vector<llama_token> order;
  order.reserve(static_cast<size_t>(v.nVocab));
  for (llama_token id = 0; id < v.nVocab; id++) {
    if (vocab->is_eog(id)) {
      v.kind[id] = TokenKind::kEog;
      v.eog.push_back(id);
      continue;
    }
    const std::string& piece = vocab->token_to_piece(id);
    if (piece.empty() || piece[0] == 0) {
      v.kind[id] = TokenKind::kRejected;
      continue;
    }
    size_t n = strnlen(piece.data(), piece.size());
    if (CanDecodeToZero(piece.substr(0, n)) || n > UINT16_MAX) {
      v.kind[id] = TokenKind::kSlow;
      v.slow.push_back(id);
      continue;
    }
    data[id] = piece.data();
    length[id] = static_cast<uint32_t>(n);
    order.push_back(id);
  }
  // Sort by piece: the first 8 bytes as one big-endian number decide most comparisons.
  std::vector<uint64_t> head(static_cast<size_t>(v.nVocab), 0);
  for (llama_token id : order) {
    uint64_t h = 0;
    for (uint32_t k = 0; k < 8; k++) h = (h << 8) | (k < length[id] ? static_cast<uint8_t>(data[id][k]) : 0);
    head[id] = h;
  }
  auto less = [&](llama_token a, llama_token b) {
    if (head[a] != head[b]) return head[a] < head[b];
    if (length[a] > 8 && length[b] > 8) {
      int c = std::memcmp(data[a] + 8, data[b] + 8, std::min(length[a], length[b]) - 8);
      if (c != 0) return c < 0;
    }
    if (length[a] != length[b]) return length[a] < length[b];
    return a < b;
  };
  std::sort(order.begin(), order.end(), less);

  // Sorted pieces give the nodes in preorder: each piece opens nodes past its common prefix with
  // the previous one, and closes the previous piece's nodes below that prefix. A piece never ends
  // at a node created before the previous piece's, so tokens attach in node order.
  const size_t estimate = order.size() * 3;
  v.byte.reserve(estimate);
  v.depth.reserve(estimate);
  v.next.reserve(estimate);
  v.byte.push_back(0);
  v.depth.push_back(0);
  v.next.push_back(0);
  std::vector<uint32_t> count{0};
  count.reserve(estimate);
  std::vector<uint32_t> path{0};  // node at each depth of the current piece
  const char* prev = "";
  uint32_t prevLen = 0;
  auto close = [&](size_t keep) {
    while (path.size() > keep) {
      v.next[path.back()] = static_cast<uint32_t>(v.byte.size());
      path.pop_back();
    }
  };
  for (llama_token id : order) {
    uint32_t len = length[id];
    uint32_t common = 0;
    while (common < len && common < prevLen && data[id][common] == prev[common]) common++;
    close(common + 1);
    for (uint32_t d = common; d < len; d++) {
      uint32_t node = static_cast<uint32_t>(v.byte.size());
      v.byte.push_back(static_cast<uint8_t>(data[id][d]));
      v.depth.push_back(static_cast<uint16_t>(d + 1));
      v.next.push_back(0);
      count.push_back(0);
      path.push_back(node);
    }
    count[path.back()]++;
    v.nodeOf[id] = path.back();
    v.maxDepth = std::max<uint16_t>(v.maxDepth, static_cast<uint16_t>(len));
    prev = data[id];
    prevLen = len;
  }
  close(0);
  v.tokenStart.assign(v.byte.size() + 1, 0);
  for (size_t i = 0; i < v.byte.size(); i++) v.tokenStart[i + 1] = v.tokenStart[i] + count[i];
  v.tokens = std::move(order);
  // Each node's UTF-8 state from the root (bytes still owed by its last character, and that
  // character's lead byte), and whether its byte is odd there (kOddBytes): a continuation byte
  // where a character starts or a byte other than 80-BF where one is owed, a lead byte whose
  // character may decode below 0x80 (C0, C1; E0 and F0 unless their next byte makes it >= 0x800
  // or 0x10000 as in valid UTF-8) or one past any lead UTF-8 has (F5-FF); or a token ending
  // inside a character (kOddPartial: llama.cpp's partial check decides that one).
  const size_t n = v.byte.size();
  std::vector<uint8_t> odd(n, 0);
  {
    struct Utf8At {
      int8_t owed = 0;
      uint8_t lead = 0;
    };
    std::vector<Utf8At> atDepth(static_cast<size_t>(v.maxDepth) + 2);
    for (size_t i = 1; i < n; i++) {
      const Utf8At before = atDepth[v.depth[i] - 1];
      const uint8_t b = v.byte[i];
      Utf8At after;
      if (before.owed > 0) {
        if ((b >> 6) != 2 || (before.lead == 0xE0 && b < 0xA0) || (before.lead == 0xF0 && b < 0x90)) odd[i] |= VocabIndex::kOddBytes;
        after.owed = static_cast<int8_t>(before.owed - 1);
      } else if (b >= 0x80) {
        if (b < 0xC2 || b > 0xF4) odd[i] |= VocabIndex::kOddBytes;
        after.owed = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
        after.lead = b;
      }
      if (after.owed > 0 && v.tokenStart[i] != v.tokenStart[i + 1]) odd[i] |= VocabIndex::kOddPartial;
      atDepth[v.depth[i]] = after;
    }
  }
  // Children come after their parent in preorder: from the last node back, each node's bytes
  // below are its children's bytes and what lies below them.
  v.below.assign(n, VocabIndex::Bytes{});
  v.belowOdd.assign(n, 0);
  v.height.assign(n, 0);
  for (size_t i = n; i-- > 0;) {
    VocabIndex::Bytes b;
    uint8_t anyOdd = 0;
    uint16_t height = 0;
    for (uint32_t c = static_cast<uint32_t>(i) + 1; c < v.next[i]; c = v.next[c]) {
      const uint8_t x = v.byte[c];
      if (x >= 0x80) b.lo |= 1;
      else if (x < 64) b.lo |= 1ULL << x;
      else b.hi |= 1ULL << (x - 64);
      b.lo |= v.below[c].lo;
      b.hi |= v.below[c].hi;
      anyOdd |= odd[c] | v.belowOdd[c];
      height = std::max<uint16_t>(height, static_cast<uint16_t>(v.height[c] + 1));
    }
    v.height[i] = height;
    v.below[i] = b;
    v.belowOdd[i] = anyOdd;
  }
  v.buildMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return index;
}

std::shared_ptr<GrammarPool> VocabIndexHolder::Pool() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pool_) pool_ = std::make_shared<GrammarPool>();
  return pool_;
}

std::shared_ptr<SharedEntries> VocabIndexHolder::Shared() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!sharing_) return nullptr;
  if (!shared_) shared_ = std::make_shared<SharedEntries>();
  return shared_;
}

void VocabIndexHolder::SetSharing(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  sharing_ = on;
  if (!on) shared_.reset();
}

std::shared_ptr<const VocabIndex> VocabIndexHolder::Get(const llama_vocab* vocab) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!index_ || index_->vocab != vocab) index_ = VocabIndex::Build(vocab);
  return index_;
}

}  // namespace lp::grammar
