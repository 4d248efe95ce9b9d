// An open-addressing hash set of integer ids whose keys live elsewhere (interning tables):
// the caller hashes a key and says whether an id holds it.
#pragma once

#include <cstdint>
#include <vector>

namespace lp::grammar {

class IdTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  void Clear() {
    slots_.assign(slots_.size(), Slot{0, kNone});
    size_ = 0;
  }

  // Returns the id holding the key, or kNone. `equal(id)` compares the stored key with the probe.
  template <typename Equal>
  uint32_t Find(uint64_t hash, Equal&& equal) const {
    if (slots_.empty()) return kNone;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id == kNone) return kNone;
      if (s.hash == hash && equal(s.id)) return s.id;
    }
  }

  // Records `id` under `hash` (the key must not be present yet).
  void Insert(uint64_t hash, uint32_t id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place(hash, id);
    size_++;
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t id;
  };

  void Place(uint64_t hash, uint32_t id) {
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].id != kNone) i = (i + 1) & mask;
    slots_[i] = Slot{hash, id};
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{0, kNone});
    for (const Slot& s : old) {
      if (s.id != kNone) Place(s.hash, s.id);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace lp::grammar
