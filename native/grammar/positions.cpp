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
  // Signatures are looked up through one scratch vector (a vector per position, allocated and
  // hashed, was most of the first mask of a large grammar); a copy is kept only for a new one.
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> ids;
  uint32_t nextId = 0;
  std::vector<uint32_t> sig;
  auto idOf = [&]() {
    auto it = ids.find(sig);
    if (it != ids.end()) return it->second;
    ids.emplace(sig, nextId);
    return nextId++;
  };
  sig.assign(1, LLAMA_GRETYPE_END);
  idOf();  // class 0: end of a sequence
  for (size_t r = 0; r < nr; r++) {
    const auto& rule = rules[r];
    for (size_t i = 0; i < rule.size(); i++) {
      const uint32_t g = ruleStart_[r] + static_cast<uint32_t>(i);
      const Elem& e = rule[i];
      sig.assign(1, static_cast<uint32_t>(e.type));
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
          class_[g] = nextId++;
          continue;
        case LLAMA_GRETYPE_TOKEN:
        case LLAMA_GRETYPE_TOKEN_NOT:
          sig.push_back(e.value);
          succ[g] = g + 1;
          break;
        case LLAMA_GRETYPE_RULE_REF:
          succ[g] = g + 1;
          break;
      }
      class_[g] = idOf();
    }
  }
  // Refine by successor and, for references, by the referenced rule's alternatives, until stable.
  // A worklist (Moore's refinement restricted to what changed): only positions whose successor or
  // referenced rule changed class last round are looked at again, and a class splits off only the
  // members whose key left the class's key. A nest of N rules (x{0,N}) splits one level per round,
  // so the old full rounds cost N x positions; this costs about the positions once.
  constexpr uint32_t kNone = UINT32_MAX;
  uint32_t classes = nextId;
  std::vector<uint32_t> pred(n, kNone);   // the position whose successor this is (at most one)
  std::vector<uint32_t> altOf(n, kNone);  // the rule this position starts an alternative of
  std::vector<std::vector<uint32_t>> users(nr);  // positions referencing each rule
  std::vector<uint32_t> refOf(n, kNone);         // the rule a position references
  for (uint32_t g = 0; g < n; g++) {
    if (succ[g] != UINT32_MAX && succ[g] < n) pred[succ[g]] = g;
  }
  for (size_t r = 0; r < nr; r++) {
    for (uint32_t a : altStarts[r]) altOf[a] = static_cast<uint32_t>(r);
    const auto& rule = rules[r];
    for (size_t i = 0; i < rule.size(); i++) {
      if (rule[i].type == LLAMA_GRETYPE_RULE_REF && rule[i].value < nr) {
        users[rule[i].value].push_back(ruleStart_[r] + static_cast<uint32_t>(i));
        refOf[ruleStart_[r] + static_cast<uint32_t>(i)] = rule[i].value;
      }
    }
  }
  // rule signature (its alternatives' classes) -> id; kept across rounds (class ids are never
  // reused, so an entry still matching is still right)
  std::vector<uint32_t> ruleClass(nr, 0);
  auto ruleSig = [&](size_t r) {
    sig.clear();
    for (uint32_t a : altStarts[r]) sig.push_back(class_[a]);
    return idOf();
  };
  ids.clear();
  nextId = 0;  // rule signatures: ids of their own
  for (size_t r = 0; r < nr; r++) ruleClass[r] = ruleSig(r);
  std::vector<uint32_t> size(classes, 0);
  for (uint32_t g = 0; g < n; g++) size[class_[g]]++;
  std::vector<uint64_t> classKey(classes, 0);
  auto keyOf = [&](uint32_t g) {
    const uint64_t succClass = succ[g] == UINT32_MAX ? kNone : class_[succ[g]];
    const uint64_t ref = refOf[g] == kNone ? 0 : ruleClass[refOf[g]] + 1ULL;
    return succClass | (ref << 32);
  };
  std::vector<uint32_t> dirty;
  for (uint32_t g = 0; g < n; g++) {
    if (class_[g] != 0) dirty.push_back(g);
  }
  std::vector<uint32_t> stamp(n, 0);
  std::vector<uint32_t> ruleStamp(nr, 0);
  uint32_t round = 0;
  uint64_t work = 0;
  struct Item {
    uint32_t cls;
    uint64_t key;
    uint32_t g;
    bool operator<(const Item& o) const { return cls != o.cls ? cls < o.cls : key != o.key ? key < o.key : g < o.g; }
  };
  std::vector<Item> items;
  std::vector<uint32_t> moved;
  std::vector<uint32_t> dirtyRules;
  while (!dirty.empty()) {
    work += dirty.size();
    if (work > kMaxWork) {
      for (uint32_t g = 0; g < n; g++) class_[g] = g;
      count_ = n;
      return;
    }
    round++;
    items.clear();
    for (uint32_t g : dirty) items.push_back({class_[g], keyOf(g), g});
    std::sort(items.begin(), items.end());
    moved.clear();
    for (size_t i = 0; i < items.size();) {
      size_t j = i;
      while (j < items.size() && items[j].cls == items[i].cls) j++;
      const uint32_t c = items[i].cls;
      const bool othersStay = size[c] > j - i;  // members not looked at keep the class's key
      // the key that keeps the class id: the untouched members' key, else the largest group's
      uint64_t keeper = classKey[c];
      if (!othersStay) {
        size_t best = 0;
        for (size_t a = i; a < j;) {
          size_t b = a;
          while (b < j && items[b].key == items[a].key) b++;
          if (b - a > best) {
            best = b - a;
            keeper = items[a].key;
          }
          a = b;
        }
        classKey[c] = keeper;
      }
      for (size_t a = i; a < j;) {
        size_t b = a;
        while (b < j && items[b].key == items[a].key) b++;
        if (items[a].key != keeper) {
          const uint32_t fresh = classes++;
          size.push_back(static_cast<uint32_t>(b - a));
          classKey.push_back(items[a].key);
          size[c] -= static_cast<uint32_t>(b - a);
          for (size_t k = a; k < b; k++) {
            class_[items[k].g] = fresh;
            moved.push_back(items[k].g);
          }
        }
        a = b;
      }
      i = j;
    }
    // what looks at a moved position: its predecessor, and (through the rule's signature) the
    // references to the rule whose alternative it starts
    dirty.clear();
    dirtyRules.clear();
    for (uint32_t g : moved) {
      const uint32_t p = pred[g];
      if (p != kNone && class_[p] != 0 && stamp[p] != round) {
        stamp[p] = round;
        dirty.push_back(p);
      }
      const uint32_t r = altOf[g];
      if (r != kNone && ruleStamp[r] != round) {
        ruleStamp[r] = round;
        dirtyRules.push_back(r);
      }
    }
    for (uint32_t r : dirtyRules) {
      const uint32_t id = ruleSig(r);
      if (id == ruleClass[r]) continue;
      ruleClass[r] = id;
      for (uint32_t u : users[r]) {
        if (class_[u] != 0 && stamp[u] != round) {
          stamp[u] = round;
          dirty.push_back(u);
        }
      }
    }
  }
  count_ = classes;
}

uint32_t PositionClasses::Of(const Elem* pos) const {
  auto it = std::upper_bound(bases_.begin(), bases_.end(), std::make_pair(pos, UINT32_MAX));
  --it;
  return class_[ruleStart_[it->second] + static_cast<uint32_t>(pos - it->first)];
}

}  // namespace lp::grammar
