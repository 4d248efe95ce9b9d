#include "stacks.h"

#include <algorithm>

namespace lp::grammar {
namespace {

constexpr uint32_t kMaxRowWidth = 320;  // classes past this many use the overflow map

uint64_t FrameHash(const Elem* pos, StackId parent) {
  return Mix64(reinterpret_cast<uintptr_t>(pos) * 0x9E3779B97F4A7C15ULL ^ parent);
}

}  // namespace

StackEngine::StackEngine(const llama_grammar_rules* rules, StackLimits limits) : rules_(rules), limits_(limits) {
  frames_.push_back(Frame{nullptr, kEmpty, 0, 0});
  frames_.push_back(Frame{nullptr, kBottom, 0, 0});
  sets_.push_back(Set{0, 0, 0, 0, 0});

  // The class boundaries: every range's first code point and the one after its last. A large
  // grammar names the same few hundred code points over and over (a sort of all of them was a
  // tenth of its Create), so those below 2^16 are marked in a bitmap and only the rest sorted.
  std::vector<uint64_t> low(1024, 0);
  const auto mark = [&](uint32_t cp) {
    if (cp < 65536) {
      low[cp >> 6] |= uint64_t{1} << (cp & 63);
    } else {
      boundaries_.push_back(cp);
    }
  };
  for (const auto& rule : *rules_) {
    for (size_t i = 0; i < rule.size(); i++) {
      const Elem& e = rule[i];
      if (e.type != LLAMA_GRETYPE_CHAR && e.type != LLAMA_GRETYPE_CHAR_NOT && e.type != LLAMA_GRETYPE_CHAR_ALT) continue;
      uint32_t hi = e.value;
      if (i + 1 < rule.size() && rule[i + 1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER) hi = rule[i + 1].value;
      mark(e.value);
      if (hi != UINT32_MAX) mark(hi + 1);
    }
  }
  std::sort(boundaries_.begin(), boundaries_.end());
  boundaries_.erase(std::unique(boundaries_.begin(), boundaries_.end()), boundaries_.end());
  std::vector<uint32_t> sorted;
  for (uint32_t w = 0; w < low.size(); w++) {
    for (uint64_t bits = low[w]; bits != 0; bits &= bits - 1) sorted.push_back(w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits)));
  }
  sorted.insert(sorted.end(), boundaries_.begin(), boundaries_.end());
  boundaries_ = std::move(sorted);
  classCount_ = static_cast<uint32_t>(boundaries_.size()) + 1;
  rowWidth_ = std::min(classCount_, kMaxRowWidth);
  classRep_.push_back(0);
  for (uint32_t b : boundaries_) classRep_.push_back(b);
  for (uint32_t c = 0; c < 128; c++) {
    asciiClass_[c] = static_cast<uint8_t>(std::upper_bound(boundaries_.begin(), boundaries_.end(), c) - boundaries_.begin());
  }
}

uint32_t StackEngine::ClassOf(uint32_t cp) const {
  // Grammars rarely name characters past ASCII: most code points fall in the last class.
  if (boundaries_.empty() || cp >= boundaries_.back()) return classCount_ - 1;
  return static_cast<uint32_t>(std::upper_bound(boundaries_.begin(), boundaries_.end(), cp) - boundaries_.begin());
}

StackId StackEngine::Push(const Elem* pos, StackId parent) {
  uint64_t h = FrameHash(pos, parent);
  uint32_t found = frameIndex_.Find(h, [&](uint32_t id) { return frames_[id].pos == pos && frames_[id].parent == parent; });
  if (found != IdTable::kNone) return found;
  StackId id = static_cast<StackId>(frames_.size());
  frames_.push_back(Frame{pos, parent, frames_[parent].depth + 1, 0});
  frameIndex_.Insert(h, id);
  return id;
}

StackId StackEngine::FromLlama(const llama_grammar_stack& stack) {
  StackId id = kEmpty;
  for (const Elem* pos : stack) id = Push(pos, id);
  return id;
}

llama_grammar_stack StackEngine::ToLlama(StackId s) const {
  llama_grammar_stack out(frames_[s].depth);
  for (size_t i = out.size(); i > 0; i--) {
    out[i - 1] = frames_[s].pos;
    s = frames_[s].parent;
  }
  return out;
}

const std::vector<StackId>* StackEngine::Advance(StackId s) {
  if (frames_[s].advance != 0) return &advanced_[frames_[s].advance - 1];
  std::vector<StackId> result;
  // `seen` as llama.cpp keeps it (per call); ids make it a plain hash set.
  IdTable seen;
  todo_.clear();
  todo_.push_back(s);
  uint32_t steps = 0;
  while (!todo_.empty()) {
    StackId cur = todo_.back();
    todo_.pop_back();
    uint64_t h = Mix64(cur);
    if (seen.Find(h, [&](uint32_t id) { return id == cur; }) != IdTable::kNone) continue;
    seen.Insert(h, cur);
    if (++steps > limits_.maxAdvanceSteps) {
      Fail("the grammar expands into more than " + std::to_string(limits_.maxAdvanceSteps) + " stacks without consuming input");
      return nullptr;
    }
    if (cur == kEmpty || cur == kBottom) {
      result.push_back(cur);
      continue;
    }
    const Elem* pos = frames_[cur].pos;
    switch (pos->type) {
      case LLAMA_GRETYPE_RULE_REF: {
        if (pos->value >= rules_->size() || (*rules_)[pos->value].empty()) {
          Fail("the grammar references an undefined rule");
          return nullptr;
        }
        const Elem* sub = (*rules_)[pos->value].data();
        while (true) {
          StackId next = frames_[cur].parent;
          if (!IsEndOfSequence(pos + 1)) next = Push(pos + 1, next);
          if (!IsEndOfSequence(sub)) next = Push(sub, next);
          todo_.push_back(next);
          while (!IsEndOfSequence(sub)) sub++;
          if (sub->type != LLAMA_GRETYPE_ALT) break;
          sub++;
        }
        break;
      }
      case LLAMA_GRETYPE_CHAR:
      case LLAMA_GRETYPE_CHAR_NOT:
      case LLAMA_GRETYPE_CHAR_ANY:
      case LLAMA_GRETYPE_TOKEN:
      case LLAMA_GRETYPE_TOKEN_NOT:
        result.push_back(cur);
        break;
      default:
        Fail("internal: a grammar stack stopped inside a character range");
        return nullptr;
    }
    if (result.size() > limits_.maxStacks) {
      Fail("the grammar is too ambiguous: one step has more than " + std::to_string(limits_.maxStacks) + " parse stacks");
      return nullptr;
    }
  }
  advancedBytes_ += result.capacity() * sizeof(StackId) + sizeof(result);
  advanced_.push_back(std::move(result));
  frames_[s].advance = static_cast<uint32_t>(advanced_.size());
  return &advanced_.back();
}

SetId StackEngine::InternSet(std::vector<StackId>* stacks) {
  std::sort(stacks->begin(), stacks->end());
  stacks->erase(std::unique(stacks->begin(), stacks->end()), stacks->end());
  if (stacks->empty()) return kDead;
  if (stacks->size() > limits_.maxStacks) {
    Fail("the grammar is too ambiguous: more than " + std::to_string(limits_.maxStacks) + " parse stacks at once");
    return kDead;
  }
  uint64_t h = 0x243F6A8885A308D3ULL;
  for (StackId s : *stacks) h = Mix64(h ^ s);
  const std::vector<StackId>& v = *stacks;
  uint32_t found = setIndex_.Find(h, [&](uint32_t id) {
    const Set& set = sets_[id];
    return set.end - set.begin == v.size() && std::equal(v.begin(), v.end(), setPool_.begin() + set.begin);
  });
  if (found != IdTable::kNone) return found;
  Set set{static_cast<uint32_t>(setPool_.size()), 0, 0, 0, 0};
  for (StackId s : v) {
    if (s == kEmpty) {
      set.flags |= kHasEmpty;
    } else if (s == kBottom) {
      set.flags |= kHasBottom;
    } else if (IsCharTop(frames_[s].pos)) {
      set.flags |= kCanStep;
      const Elem* p = frames_[s].pos;
      if (p->type != LLAMA_GRETYPE_CHAR) {
        set.flags |= kWide;  // [^...] and . reach every code point
      } else {
        const Elem* end = MatchChar(p, 0).second;
        for (; p != end; p++) set.maxChar = std::max(set.maxChar, p->value);
      }
    } else if (IsTokenTop(frames_[s].pos)) {
      set.flags |= kHasToken;
    }
  }
  setPool_.insert(setPool_.end(), v.begin(), v.end());
  set.end = static_cast<uint32_t>(setPool_.size());
  SetId id = static_cast<SetId>(sets_.size());
  sets_.push_back(set);
  setIndex_.Insert(h, id);
  return id;
}

int32_t* StackEngine::Row(SetId set) {
  if (sets_[set].row == 0) {
    uint32_t width = rowWidth_;
    sets_[set].row = static_cast<uint32_t>(rows_.size()) + 1;
    rows_.resize(rows_.size() + width, -1);
    if (set == kDead) std::fill(rows_.end() - width, rows_.end(), static_cast<int32_t>(kDead));
  }
  return rows_.data() + (sets_[set].row - 1);
}

SetId StackEngine::ComputeNext(SetId set, uint32_t cls, uint32_t cp) {
  uint64_t overflowKey = (static_cast<uint64_t>(set) << 32) | cls;
  uint64_t overflowHash = Mix64(overflowKey);
  if (cls >= rowWidth_) {
    // A grammar with hundreds of distinct characters: the rarer classes live in a map.
    uint32_t found = overflowIndex_.Find(overflowHash, [&](uint32_t id) { return overflowKeys_[id] == overflowKey; });
    if (found != IdTable::kNone) return overflowValues_[found];
  }
  std::vector<StackId> out;
  for (uint32_t i = sets_[set].begin; i < sets_[set].end; i++) {
    StackId s = setPool_[i];
    if (s == kEmpty || s == kBottom) continue;
    const Elem* top = frames_[s].pos;
    if (!IsCharTop(top)) continue;
    auto m = MatchChar(top, cp);
    if (!m.first) continue;
    StackId next = frames_[s].parent;
    if (!IsEndOfSequence(m.second)) next = Push(m.second, next);
    const std::vector<StackId>* adv = Advance(next);
    if (adv == nullptr) return kDead;
    out.insert(out.end(), adv->begin(), adv->end());
  }
  SetId result = InternSet(&out);
  if (failed()) return kDead;
  if (cls < rowWidth_) {
    Row(set)[cls] = static_cast<int32_t>(result);
  } else {
    overflowIndex_.Insert(overflowHash, static_cast<uint32_t>(overflowKeys_.size()));
    overflowKeys_.push_back(overflowKey);
    overflowValues_.push_back(result);
  }
  return result;
}

bool StackEngine::AcceptsPartial(SetId set, uint32_t value, int remain) {
  if (sets_[set].end - sets_[set].begin <= 4) {
    for (uint32_t i = sets_[set].begin; i < sets_[set].end; i++) {
      StackId s = setPool_[i];
      if (s == kEmpty || s == kBottom) continue;
      const Elem* top = frames_[s].pos;
      if (IsCharTop(top) && MatchPartialChar(top, value, remain)) return true;
    }
    return false;
  }
  uint64_t key = (static_cast<uint64_t>(set) << 26) ^ (static_cast<uint64_t>(value) << 2) ^ static_cast<uint64_t>(remain);
  uint64_t h = Mix64(key * 0x9E3779B97F4A7C15ULL + set);
  uint32_t found = partialIndex_.Find(h, [&](uint32_t id) { return (partialKeys_[id] >> 1) == (key & (~0ULL >> 1)); });
  if (found != IdTable::kNone) return partialKeys_[found] & 1;
  bool verdict = false;
  for (uint32_t i = sets_[set].begin; i < sets_[set].end && !verdict; i++) {
    StackId s = setPool_[i];
    if (s == kEmpty || s == kBottom) continue;
    const Elem* top = frames_[s].pos;
    if (IsCharTop(top) && MatchPartialChar(top, value, remain)) verdict = true;
  }
  partialIndex_.Insert(h, static_cast<uint32_t>(partialKeys_.size()));
  partialKeys_.push_back(((key & (~0ULL >> 1)) << 1) | (verdict ? 1 : 0));
  return verdict;
}

size_t StackEngine::MemoryBytes() const {
  const size_t adv = advancedBytes_;
  return frames_.capacity() * sizeof(Frame) + sets_.capacity() * sizeof(Set) + setPool_.capacity() * sizeof(StackId) +
         rows_.capacity() * sizeof(int32_t) + adv + (frameIndex_.size() + setIndex_.size()) * 24 + partialKeys_.capacity() * 8;
}

}  // namespace lp::grammar
