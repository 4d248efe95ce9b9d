// Grammar positions up to equivalence: two element positions are in one class when everything the
// grammar can do from them is the same (same characters in the same order, same rules below, up to
// the end of their sequence), found by partition refinement as in DFA minimization. A grammar with
// ten tools repeats the same pieces (a string, a name pattern, the argument separators) ten times
// over; the mask engine keys its cache on classes, so each piece is walked once.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "llama-semantics.h"

namespace lp::grammar {

class PositionClasses {
 public:
  explicit PositionClasses(const llama_grammar_rules& rules);
  // The class of an element position (any element of the rules, END and ALT included).
  uint32_t Of(const Elem* pos) const;
  uint32_t count() const { return count_; }

 private:
  const llama_grammar_rules& rules_;
  std::vector<std::pair<const Elem*, uint32_t>> bases_;  // rule data pointer -> rule index, sorted
  std::vector<uint32_t> ruleStart_;                      // offset of each rule in class_
  std::vector<uint32_t> class_;
  uint32_t count_ = 0;
};

}  // namespace lp::grammar
