#include "sampling-select.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lp {
namespace {

// Rows are scanned in blocks of 32: one compare of a block against the current bar (4 lanes at a
// time where the compiler has vector types; its autovectorizer leaves this scalar) and, only for a
// block holding a candidate, the entries above the bar one by one. Early in a row the bar is low
// and most blocks hold one, hence the lane mask rather than a pass over all 32.
constexpr int32_t kBlock = 32;

#if defined(__GNUC__) || defined(__clang__)
typedef float Floats4 __attribute__((vector_size(16)));
typedef int32_t Ints4 __attribute__((vector_size(16)));

// Bit j set: v[j] > bar.
uint32_t Above(const float* v, float bar) {
  const Floats4 b = {bar, bar, bar, bar};
  Ints4 any = {0, 0, 0, 0};
  Ints4 lanes[kBlock / 4];
  for (int32_t g = 0; g < kBlock / 4; g++) {
    Floats4 x;
    std::memcpy(&x, v + 4 * g, sizeof x);
    lanes[g] = x > b;
    any |= lanes[g];
  }
  if ((any[0] | any[1] | any[2] | any[3]) == 0) return 0;
  uint32_t mask = 0;
  for (int32_t g = 0; g < kBlock / 4; g++) {
    for (int32_t l = 0; l < 4; l++) mask |= static_cast<uint32_t>(lanes[g][l] & 1) << (4 * g + l);
  }
  return mask;
}

int32_t LowestBit(uint32_t mask) { return __builtin_ctz(mask); }
#else
uint32_t Above(const float* v, float bar) {
  uint32_t mask = 0;
  for (int32_t j = 0; j < kBlock; j++) mask |= static_cast<uint32_t>(v[j] > bar) << j;
  return mask;
}

int32_t LowestBit(uint32_t mask) {
  int32_t j = 0;
  while ((mask & 1u) == 0) {
    mask >>= 1;
    j++;
  }
  return j;
}
#endif

// Calls consider(j) for the entries of each block above the bar it holds when the block is
// reached (consider checks again: the bar may have risen meanwhile), then for the tail one by one.
template <typename Bar, typename Consider>
void ScanAbove(const float* logits, int32_t from, int32_t n, Bar bar, Consider consider) {
  int32_t i = from;
  for (; i + kBlock <= n; i += kBlock) {
    for (uint32_t mask = Above(logits + i, bar()); mask != 0; mask &= mask - 1) consider(i + LowestBit(mask));
  }
  for (; i < n; i++) consider(i);
}

bool Skipped(const std::vector<uint64_t>& skip, int32_t id) {
  return !skip.empty() && ((skip[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u) != 0;
}

bool Greater(const llama_token_data& a, const llama_token_data& b) { return a.logit > b.logit; }

}  // namespace

// Candidates above the bar are appended to *out; when it holds kSpare more than k, nth_element
// keeps the k largest and the bar rises to the k-th: a few cheap appends per row instead of a heap
// operation for each new candidate.
void SelectTopK(const float* logits, int32_t n, int32_t k, const std::vector<uint64_t>& skip,
                const std::vector<llama_token_data>& changed, std::vector<llama_token_data>* out) {
  constexpr size_t kSpare = 128;
  std::vector<llama_token_data>& top = *out;
  const size_t want = static_cast<size_t>(std::max(k, 0));
  top.clear();
  top.reserve(want + kSpare + 1);
  auto keepLargest = [&]() {
    std::nth_element(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(want - 1), top.end(), Greater);
    top.resize(want);
    return top[want - 1].logit;
  };
  top.insert(top.end(), changed.begin(), changed.end());
  int32_t i = 0;
  for (; i < n && top.size() < want; i++) {
    if (!Skipped(skip, i)) top.push_back(llama_token_data{i, logits[i], 0.0f});
  }
  if (top.size() < want) return;  // fewer than k tokens: all of them
  float bar = keepLargest();
  ScanAbove(logits, i, n, [&] { return bar; }, [&](int32_t j) {
    if (logits[j] > bar && !Skipped(skip, j)) {
      top.push_back(llama_token_data{j, logits[j], 0.0f});
      if (top.size() > want + kSpare) bar = keepLargest();
    }
  });
  if (top.size() > want) keepLargest();
}

llama_token ArgmaxFirst(const float* logits, int32_t n, const std::vector<uint64_t>& skip,
                        const std::vector<llama_token_data>& changed) {
  if (n <= 0) return LLAMA_TOKEN_NULL;
  // The row scan finds the first maximum among the unchanged ids (id 0 by its value either way:
  // llama_sampler_greedy starts there); then the changed ids join by (value, then lower id).
  llama_token best = 0;
  float bestValue = logits[0];
  for (const auto& d : changed) {
    if (d.id == 0) bestValue = d.logit;
  }
  // (from 0: id 0 is never above itself, and a skipped id 0 is skipped)
  ScanAbove(logits, 0, n, [&] { return bestValue; }, [&](int32_t j) {
    if (logits[j] > bestValue && !Skipped(skip, j)) {
      best = j;
      bestValue = logits[j];
    }
  });
  for (const auto& d : changed) {
    if (d.logit > bestValue || (d.logit == bestValue && d.id < best)) {
      best = d.id;
      bestValue = d.logit;
    }
  }
  return best;
}

}  // namespace lp
