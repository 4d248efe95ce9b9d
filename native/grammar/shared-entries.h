// Mask cache entries shared by every grammar of one model. An entry (mask.h) depends only on the
// grammar reachable from its key's frames, so the key is written out canonically (the frames'
// elements, then every rule they reach, rules numbered in the order met), and grammars that hold
// the same piece (a JSON string, a number, an enum of the same names) build its entry once: a new
// request's first masks cost what the pieces it does not share with earlier ones cost. Keys that
// reach a large grammar are not shared (writing them out would cost more than a hit saves).
#pragma once

#include <llama.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace lp::grammar {

// What one grammar position (a key of top frames) admits by itself, whatever lies below it.
struct MaskEntry {
  std::vector<llama_token> accepted;  // sorted; or:
  std::vector<uint64_t> bits;         // when many are accepted
  std::vector<uint32_t> continuations;
  std::vector<llama_token> byId;
  bool tokenNot = false;
  bool deeper = false;  // too many continuations: look up the key one frame deeper
  bool stub = false;    // deeper, found early: the walk stopped there, nothing else is filled in

  size_t Bytes() const {
    return sizeof(MaskEntry) + accepted.capacity() * sizeof(llama_token) + bits.capacity() * 8 + continuations.capacity() * 4 +
           byId.capacity() * sizeof(llama_token);
  }
};

class SharedEntries {
 public:
  // Canonical keys longer than this many elements are not shared.
  static constexpr size_t kMaxKeyElements = 1024;
  // Past it the table starts over (entries still in use stay alive with their grammars).
  static constexpr size_t kBudget = 64u << 20;

  std::shared_ptr<const MaskEntry> Find(const std::string& key);
  void Put(const std::string& key, std::shared_ptr<const MaskEntry> entry);
  size_t bytes() const { return bytes_; }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const MaskEntry>> map_;
  size_t bytes_ = 0;
};

}  // namespace lp::grammar
