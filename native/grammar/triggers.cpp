#include "triggers.h"

#include <algorithm>
#include <deque>

namespace lp::grammar {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr size_t kMaxWordBytes = 1u << 20;
constexpr size_t kMaxTableEntries = 1u << 24;

}  // namespace

WordAutomaton::WordAutomaton(const std::vector<std::string>& words, const std::vector<uint32_t>& ids) {
  // Bytes that occur in some word get a class each; every other byte shares class 0.
  for (const auto& w : words) {
    for (char c : w) {
      uint8_t b = static_cast<uint8_t>(c);
      if (cls_[b] == 0) cls_[b] = static_cast<uint8_t>(classes_++);
    }
  }
  // The trie (sparse while building).
  std::vector<std::vector<std::pair<uint8_t, uint32_t>>> child(1);
  out_.assign(1, kNone);
  outLength_.assign(1, 0);
  for (size_t i = 0; i < words.size(); i++) {
    uint32_t s = 0;
    for (char c : words[i]) {
      uint8_t k = cls_[static_cast<uint8_t>(c)];
      uint32_t next = kNone;
      for (auto& [key, to] : child[s]) {
        if (key == k) next = to;
      }
      if (next == kNone) {
        next = static_cast<uint32_t>(child.size());
        child.emplace_back();
        out_.push_back(kNone);
        outLength_.push_back(0);
        child[s].push_back({k, next});
      }
      s = next;
    }
    if (ids[i] < out_[s]) {
      out_[s] = ids[i];
      outLength_[s] = static_cast<uint32_t>(words[i].size());
    }
  }
  // Breadth first: failure links folded into a full transition table, outputs merged along them.
  const uint32_t states = static_cast<uint32_t>(child.size());
  delta_.assign(static_cast<size_t>(states) * classes_, 0);
  std::vector<uint32_t> fail(states, 0);
  std::deque<uint32_t> queue;
  for (auto& [k, to] : child[0]) {
    delta_[k] = to;
    queue.push_back(to);
  }
  while (!queue.empty()) {
    uint32_t s = queue.front();
    queue.pop_front();
    uint32_t f = fail[s];
    if (out_[f] < out_[s]) {
      out_[s] = out_[f];
      outLength_[s] = outLength_[f];
    }
    for (uint32_t k = 0; k < classes_; k++) delta_[static_cast<size_t>(s) * classes_ + k] = delta_[static_cast<size_t>(f) * classes_ + k];
    for (auto& [k, to] : child[s]) {
      fail[to] = delta_[static_cast<size_t>(f) * classes_ + k];
      delta_[static_cast<size_t>(s) * classes_ + k] = to;
      queue.push_back(to);
    }
  }
}

void WordAutomaton::Feed(const std::string& text, size_t from, uint32_t* bestId, size_t* bestStart) {
  uint32_t s = state_;
  for (size_t i = from; i < text.size(); i++) {
    s = delta_[static_cast<size_t>(s) * classes_ + cls_[static_cast<uint8_t>(text[i])]];
    uint32_t id = out_[s];
    if (id < *bestId) {
      *bestId = id;
      *bestStart = i + 1 - outLength_[s];
    }
  }
  state_ = s;
}

std::unique_ptr<TriggerMatcher> TriggerMatcher::Create(const std::vector<std::string>& patterns, std::string* error) {
  auto m = std::unique_ptr<TriggerMatcher>(new TriggerMatcher());
  m->patterns_ = patterns.size();
  std::vector<std::string> words;
  std::vector<uint32_t> wordIds;
  size_t wordBytes = 0;
  for (size_t i = 0; i < patterns.size(); i++) {
    const std::string& source = patterns[i];
    auto fail = [&](const std::string& why) {
      std::string shown = source.size() > 200 ? source.substr(0, 200) + "..." : source;
      *error = "trigger pattern " + std::to_string(i) + " /" + shown + "/: " + why;
      return nullptr;
    };
    std::string why;
    auto search = CompileRegex(source, false, &why);
    if (!search) return fail(why);
    // llama.cpp: a pattern written ^...$ is matched against the whole buffer first.
    const bool whole = !source.empty() && source.front() == '^' && source.back() == '$';
    if (search->isLiteral && !whole) {
      wordBytes += search->literal.size();
      if (wordBytes > kMaxWordBytes) return fail("trigger words exceed " + std::to_string(kMaxWordBytes) + " bytes in all");
      words.push_back(search->literal);
      wordIds.push_back(static_cast<uint32_t>(i));
      continue;
    }
    Pattern p;
    p.id = static_cast<uint32_t>(i);
    if (whole) {
      p.full = CompileRegex(source, true, &why);
      if (!p.full) return fail(why);
      p.fullVm = std::make_unique<RegexSearch>(p.full.get());
    }
    p.search = std::move(search);
    p.searchVm = std::make_unique<RegexSearch>(p.search.get());
    m->regexes_.push_back(std::move(p));
  }
  if (!words.empty()) {
    std::vector<uint8_t> seen(256, 0);
    size_t classes = 1;
    for (const auto& w : words) {
      for (char c : w) {
        if (!seen[static_cast<uint8_t>(c)]) {
          seen[static_cast<uint8_t>(c)] = 1;
          classes++;
        }
      }
    }
    if ((wordBytes + 1) * classes > kMaxTableEntries) {
      *error = "trigger words are too many to index (" + std::to_string(words.size()) + " words, " + std::to_string(wordBytes) + " bytes)";
      return nullptr;
    }
    m->words_ = std::make_unique<WordAutomaton>(words, wordIds);
  }
  return m;
}

size_t TriggerMatcher::StartOf(const std::vector<int64_t>& slots) {
  for (size_t g = 2; g + 1 < slots.size(); g += 2) {
    if (slots[g] >= 0 && slots[g + 1] > slots[g]) return static_cast<size_t>(slots[g]);
  }
  return static_cast<size_t>(slots[0]);
}

bool TriggerMatcher::Feed(const std::string& piece, size_t* start) {
  size_t from = buffer_.size();
  buffer_ += piece;
  uint32_t best = kNone;
  size_t bestStart = 0;
  if (words_) words_->Feed(buffer_, from, &best, &bestStart);
  for (auto& r : regexes_) {
    r.searchVm->Advance(buffer_);
    if (r.fullVm) r.fullVm->Advance(buffer_);
  }
  for (auto& r : regexes_) {
    if (r.id >= best) break;
    if ((r.fullVm && r.fullVm->Check(buffer_, &slots_)) || r.searchVm->Check(buffer_, &slots_)) {
      best = r.id;
      bestStart = StartOf(slots_);
      break;
    }
  }
  if (best == kNone) return false;
  *start = bestStart;
  return true;
}

}  // namespace lp::grammar
