// llama.cpp's grammar stacks, interned: a stack is the id of its top frame (element + parent
// frame), so equal stacks are equal ids, push/pop are O(1), and a set of stacks is a sorted id
// list, itself interned. On top of that: llama_grammar_advance_stack (memoized per stack) and
// the transition of a stack set over one code point (memoized per set and character class), which
// together turn the grammar into a lazily built automaton for the vocabulary walks and accept.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "id-table.h"
#include "llama-semantics.h"

namespace lp::grammar {

using StackId = uint32_t;
using SetId = uint32_t;

struct StackLimits {
  uint32_t maxStacks = 16384;       // stacks in one set (llama.cpp has no bound: ambiguous grammars grow)
  uint32_t maxAdvanceSteps = 1u << 20;  // expansions in one advance
};

class StackEngine {
 public:
  static constexpr StackId kEmpty = 0;   // the empty stack: the grammar is complete
  static constexpr StackId kBottom = 1;  // sentinel under a local stack (cache walks): "the context"
  static constexpr SetId kDead = 0;      // the empty set

  explicit StackEngine(const llama_grammar_rules* rules, StackLimits limits = {});

  // --- stacks
  StackId Push(const Elem* pos, StackId parent);
  const Elem* Top(StackId s) const { return frames_[s].pos; }
  StackId Parent(StackId s) const { return frames_[s].parent; }
  uint32_t Depth(StackId s) const { return frames_[s].depth; }
  StackId FromLlama(const llama_grammar_stack& stack);
  llama_grammar_stack ToLlama(StackId s) const;
  // llama_grammar_advance_stack: the stacks reachable without input whose top is a terminal (or
  // that are empty / at the bottom). Memoized. nullptr when a limit was hit (see error()).
  const std::vector<StackId>* Advance(StackId s);

  // --- sets
  // Interns the stacks (sorted, deduplicated in place). kDead for none.
  SetId InternSet(std::vector<StackId>* stacks);
  const StackId* SetBegin(SetId set) const { return setPool_.data() + sets_[set].begin; }
  const StackId* SetEnd(SetId set) const { return setPool_.data() + sets_[set].end; }
  uint32_t SetSize(SetId set) const { return sets_[set].end - sets_[set].begin; }
  bool HasEmpty(SetId set) const { return sets_[set].flags & kHasEmpty; }
  bool HasBottom(SetId set) const { return sets_[set].flags & kHasBottom; }
  bool CanStep(SetId set) const { return sets_[set].flags & kCanStep; }
  bool HasTokenTop(SetId set) const { return sets_[set].flags & kHasToken; }
  // Could some character starting with these bytes still match (a partial sequence mid-token)?
  // Conservative: false only when no stack's character range reaches that high.
  bool MayComplete(SetId set, uint32_t value, int remain) const {
    const Set& s = sets_[set];
    return (s.flags & kWide) || (value << (6 * remain)) <= s.maxChar;
  }
  // The set after one code point (llama_grammar_accept_chr over every stack). kDead when none
  // survives (or a limit was hit: check error()).
  SetId Next(SetId set, uint32_t cp) {
    uint32_t cls = cp < 128 ? asciiClass_[cp] : ClassOf(cp);
    if (cls < rowWidth_) {
      const uint32_t row = sets_[set].row;
      if (row != 0) {
        const int32_t n = rows_[row - 1 + cls];
        if (n >= 0) return static_cast<SetId>(n);
      }
    }
    return ComputeNext(set, cls, cp);
  }
  // Some char-top stack could take a completion of this partial sequence (a token ending inside
  // a character).
  bool AcceptsPartial(SetId set, uint32_t value, int remain);

  // Raw tables for the vocabulary walk's inner loop; valid until the next call that may add
  // sets or rows (Next on an unknown transition, InternSet, AcceptsPartial).
  struct SetInfo {
    uint32_t begin, end;
    uint32_t row;  // offset into rows + 1; 0 = no row yet
    uint8_t flags;
    uint32_t maxChar;  // the highest code point a positive character range of the set matches
  };
  struct View {
    const SetInfo* sets;
    const int32_t* rows;
    const uint8_t* asciiClass;
    uint32_t rowWidth;
  };
  View view() const { return View{sets_.data(), rows_.data(), asciiClass_, rowWidth_}; }
  uint32_t ClassOfCodePoint(uint32_t cp) const { return cp < 128 ? asciiClass_[cp] : ClassOf(cp); }
  static constexpr uint8_t kFlagEmpty = 1, kFlagBottom = 2, kFlagCanStep = 4, kFlagToken = 8, kFlagWide = 16;

  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }
  // Memory in use (bytes, roughly); the owner resets the engine when it grows too large.
  size_t MemoryBytes() const;
  size_t frames() const { return frames_.size(); }
  size_t setCount() const { return sets_.size(); }
  uint32_t classCount() const { return classCount_; }
  uint32_t ClassRep(uint32_t cls) const { return classRep_[cls]; }
  const llama_grammar_rules& rules() const { return *rules_; }

 private:
  static constexpr uint8_t kHasEmpty = kFlagEmpty, kHasBottom = kFlagBottom, kCanStep = kFlagCanStep, kHasToken = kFlagToken,
                           kWide = kFlagWide;

  struct Frame {
    const Elem* pos;
    StackId parent;
    uint32_t depth;
    uint32_t advance;  // index into advanced_ + 1; 0 = not computed
  };
  using Set = SetInfo;

  uint32_t ClassOf(uint32_t cp) const;
  int32_t* Row(SetId set);
  SetId ComputeNext(SetId set, uint32_t cls, uint32_t cp);
  void Fail(const std::string& message) {
    if (error_.empty()) error_ = message;
  }

  const llama_grammar_rules* rules_;
  StackLimits limits_;
  std::vector<Frame> frames_;
  IdTable frameIndex_;
  std::deque<std::vector<StackId>> advanced_;  // a deque: Advance hands out references
  size_t advancedBytes_ = 0;                   // summed as they are added: MemoryBytes runs every step
  std::vector<Set> sets_;
  std::vector<StackId> setPool_;
  IdTable setIndex_;
  std::vector<int32_t> rows_;
  // Character classes: code points between two consecutive boundaries behave alike at every
  // char element of the grammar.
  std::vector<uint32_t> boundaries_;
  std::vector<uint32_t> classRep_;  // a code point of each class
  uint8_t asciiClass_[128] = {};
  uint32_t classCount_ = 0;
  uint32_t rowWidth_ = 0;             // classes with a slot in every set's row
  IdTable overflowIndex_;             // (set, class) -> next set, for classes past the row
  std::vector<uint64_t> overflowKeys_;
  std::vector<SetId> overflowValues_;
  IdTable partialIndex_;
  std::vector<uint64_t> partialKeys_;  // (set, value, remain, verdict) packed
  std::vector<StackId> scratch_;
  std::vector<StackId> todo_;
  std::string error_;
};

}  // namespace lp::grammar
