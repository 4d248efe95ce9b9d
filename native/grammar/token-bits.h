// A set of token ids as a bit vector over the vocabulary.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace lp::grammar {

class TokenBits {
 public:
  void Resize(int32_t n) {
    n_ = n;
    words_.assign((static_cast<size_t>(n) + 63) / 64, 0);
  }
  void Clear() { std::memset(words_.data(), 0, words_.size() * sizeof(uint64_t)); }
  void Fill() {
    std::memset(words_.data(), 0xFF, words_.size() * sizeof(uint64_t));
    if (n_ % 64 != 0) words_.back() = (1ULL << (n_ % 64)) - 1;
  }
  void Set(int32_t t) { words_[static_cast<size_t>(t) >> 6] |= 1ULL << (t & 63); }
  void Reset(int32_t t) { words_[static_cast<size_t>(t) >> 6] &= ~(1ULL << (t & 63)); }
  void Assign(int32_t t, bool v) { v ? Set(t) : Reset(t); }
  bool Test(int32_t t) const { return (words_[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1; }
  void Or(const std::vector<uint64_t>& other) {
    for (size_t i = 0; i < words_.size(); i++) words_[i] |= other[i];
  }
  int32_t Count() const {
    int32_t c = 0;
    for (uint64_t w : words_) c += Popcount(w);
    return c;
  }
  // Without -mpopcnt the builtin is a library call; this is as fast on the word counts we have.
  static int Popcount(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
  }
  int32_t size() const { return n_; }
  const std::vector<uint64_t>& words() const { return words_; }
  std::vector<uint64_t>& words() { return words_; }

 private:
  int32_t n_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace lp::grammar
