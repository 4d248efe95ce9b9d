#include "positions.h"

#include <algorithm>
#include <unordered_map>

namespace lp::grammar {
namespace {

constexpr uint64_t kMaxWork = 20u << 20;  // positions x rounds; past it every position is its own class

}  // namespace

PositionClasses::PositionClasses(const llama_grammar_rules& rules) : rules_(rules) {
  const size_t nr = rules.size();
  ruleStart_.resize(nr + 1, 0);
  for (size_t r = 0; r < nr; r++) {
    ruleStart_[r + 1] = ruleStart_[r] + static_cast<uint32_t>(rules[r].size());
    bases_.push_back({rules[r].data(), static_cast<uint32_t>(r)});
  }
  std::sort(bases_.begin(), bases_.end());
  const uint32_t n = ruleStart_[nr];
  class_.assign(n, 0);

  // What follows each position (its successor after one element or one character range), and
  // for rule references the alternatives' first positions.
  std::vector<uint32_t> succ(n, UINT32_MAX);
  std::vector<std::vector<uint32_t>> altStarts(nr);
  for (size_t r = 0; r < nr; r++) {
    altStarts[r].push_back(ruleStart_[r]);
    for (size_t i = 0; i + 1 < rules[r].size(); i++) {
      if (rules[r][i].type == LLAMA_GRETYPE_ALT) altStarts[r].push_back(ruleStart_[r] + static_cast<uint32_t>(i + 1));
    }
  }
  // Initial classes: the element itself (a character range in full).
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const {
      uint64_t h = 0x9E3779B97F4A7C15ULL ^ v.size();
      for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> ids;
  ids.reserve(n * 2 + 16);
  auto idOf = [&](std::vector<uint32_t>&& sig) {
    auto it = ids.find(sig);
    if (it != ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(ids.size());
    ids.emplace(std::move(sig), id);
    return id;
  };
  idOf({LLAMA_GRETYPE_END});  // class 0: end of a sequence
  for (size_t r = 0; r < nr; r++) {
    const auto& rule = rules[r];
    for (size_t i = 0; i < rule.size(); i++) {
      const uint32_t g = ruleStart_[r] + static_cast<uint32_t>(i);
      const Elem& e = rule[i];
      std::vector<uint32_t> sig{static_cast<uint32_t>(e.type)};
      switch (e.type) {
        case LLAMA_GRETYPE_END:
        case LLAMA_GRETYPE_ALT:
          class_[g] = 0;
          continue;
        case LLAMA_GRETYPE_CHAR:
        case LLAMA_GRETYPE_CHAR_NOT:
        case LLAMA_GRETYPE_CHAR_ANY: {
          const Elem* after = MatchChar(&e, 0).second;
          for (const Elem* p = &e; p != after; p++) {
            sig.push_back(static_cast<uint32_t>(p->type));
            sig.push_back(p->value);
          }
          succ[g] = g + static_cast<uint32_t>(after - &e);
          break;
        }
        case LLAMA_GRETYPE_CHAR_ALT:
        case LLAMA_GRETYPE_CHAR_RNG_UPPER:
          // inside a character range: never a stack position; a class of its own
          sig.push_back(g);
          break;
        case LLAMA_GRETYPE_TOKEN:
        case LLAMA_GRETYPE_TOKEN_NOT:
          sig.push_back(e.value);
          succ[g] = g + 1;
          break;
        case LLAMA_GRETYPE_RULE_REF:
          succ[g] = g + 1;
          break;
      }
      class_[g] = idOf(std::move(sig));
    }
  }
  // Refine by successor and, for references, by the referenced rule's alternatives, until stable.
  // A signature packs three 21-bit fields: (class, successor's class or kNoSucc, referenced rule's
  // class + 1 or 0). Class ids are below the number of positions and rule ids below the number of
  // rules (every rule holds at least its END), so n < kNoSucc keeps every field in range.
  constexpr uint64_t kNoSucc = (1u << 21) - 1;
  uint32_t classes = static_cast<uint32_t>(ids.size());
  if (n >= kNoSucc) {
    for (uint32_t g = 0; g < n; g++) class_[g] = g;
    count_ = n;
    return;
  }
  uint64_t work = 0;
  std::unordered_map<uint64_t, uint32_t> packed;
  packed.reserve(n * 2 + 16);
  std::vector<uint32_t> ruleClass(nr, 0);
  std::vector<uint32_t> next(n, 0);
  bool stable = false;
  while (!stable) {
    work += n;
    if (work > kMaxWork) {
      for (uint32_t g = 0; g < n; g++) class_[g] = g;
      count_ = n;
      return;
    }
    ids.clear();
    for (size_t r = 0; r < nr; r++) {
      std::vector<uint32_t> sig;
      sig.reserve(altStarts[r].size());
      for (uint32_t a : altStarts[r]) sig.push_back(class_[a]);
      ruleClass[r] = idOf(std::move(sig));
    }
    packed.clear();
    uint32_t fresh = 1;  // 0 stays the end of a sequence
    for (size_t r = 0; r < nr; r++) {
      const auto& rule = rules[r];
      for (size_t i = 0; i < rule.size(); i++) {
        const uint32_t g = ruleStart_[r] + static_cast<uint32_t>(i);
        if (class_[g] == 0) {
          next[g] = 0;
          continue;
        }
        uint64_t succClass = succ[g] == UINT32_MAX ? kNoSucc : class_[succ[g]];
        uint64_t ref = (rule[i].type == LLAMA_GRETYPE_RULE_REF && rule[i].value < nr) ? ruleClass[rule[i].value] + 1 : 0;
        uint64_t key = static_cast<uint64_t>(class_[g]) | (succClass << 21) | (ref << 42);
        auto it = packed.find(key);
        if (it == packed.end()) it = packed.emplace(key, fresh++).first;
        next[g] = it->second;
      }
    }
    const uint32_t refined = fresh;
    stable = refined == classes;
    classes = refined;
    class_.swap(next);
  }
  count_ = classes;
}

uint32_t PositionClasses::Of(const Elem* pos) const {
  auto it = std::upper_bound(bases_.begin(), bases_.end(), std::make_pair(pos, UINT32_MAX));
  --it;
  return class_[ruleStart_[it->second] + static_cast<uint32_t>(pos - it->first)];
}

}  // namespace lp::grammar
