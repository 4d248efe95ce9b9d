// Trigger patterns: the subset of ECMAScript regular expressions (as std::regex reads them, byte
// by byte) that chat templates emit, compiled once and run as a Pike VM advanced byte by byte over
// the growing output. Time per byte is bounded by the program size, stack use is constant, and the
// result is what std::regex_search returns (leftmost match, alternatives and quantifiers in
// priority order) without its backtracking.
//
// Supported: literal bytes and escapes (\t \n \r \v \f \0 \xHH \uHHHH up to 7F, \ before any
// punctuation), . \d \D \s \S \w \W, classes [...] and [^...] with ranges, groups (...) and
// (?:...), | , * + ? {n} {n,} {n,m} and their lazy forms, ^ and $ (whole output), lookaheads
// (?=...) and (?!...) whose body has a bounded length and no groups that capture. Rejected with a
// message naming the construct and its offset: backreferences, \b \B, \c, classes like [[:alpha:]],
// captures inside repetitions, nesting past kMaxDepth, programs past kMaxProgram instructions.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lp::grammar {

struct ByteSet {
  std::array<uint64_t, 4> w{};
  void Add(uint8_t b) { w[b >> 6] |= 1ULL << (b & 63); }
  bool Has(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (unsigned c = lo; c <= hi; c++) Add(static_cast<uint8_t>(c));
  }
  void Merge(const ByteSet& o) {
    for (int i = 0; i < 4; i++) w[i] |= o.w[i];
  }
  void Invert() {
    for (auto& x : w) x = ~x;
  }
  int Count() const {
    int c = 0;
    for (auto x : w) c += __builtin_popcountll(x);
    return c;
  }
};

struct RegexProgram {
  enum Op : uint8_t { kByte, kSplit, kJmp, kSave, kBegin, kEnd, kLook, kMatch };
  struct Inst {
    Op op;
    uint32_t x = 0;  // kByte: set index; kSplit/kJmp: target; kSave: slot; kLook: look index
    uint32_t y = 0;  // kSplit: second (lower-priority) target; kLook: 1 = negative
  };
  struct Look {
    std::vector<Inst> body;  // anchored at the position, ends in kMatch; no captures/assertions
    uint32_t maxLength = 0;
  };
  std::vector<Inst> insts;
  std::vector<ByteSet> sets;
  std::vector<Look> looks;
  uint32_t groups = 0;        // capture groups (slots 2..2*groups+1)
  uint32_t lookahead = 0;     // longest lookahead body, bytes
  bool anchoredStart = false; // every match starts at 0
  bool prefilter = false;     // a match must start with a byte of `first`
  ByteSet first;
  // The pattern is one fixed byte string (no groups, classes or anchors): `literal`.
  bool isLiteral = false;
  std::string literal;
};

// Compiles `pattern`; on failure returns nullptr with *error set (a sentence naming the problem
// and the byte offset). `requireEnd`: a match must end at the end of the input (regex_match).
std::unique_ptr<RegexProgram> CompileRegex(const std::string& pattern, bool requireEnd, std::string* error);

constexpr uint32_t kRegexMaxDepth = 100;
constexpr uint32_t kRegexMaxProgram = 1u << 16;
constexpr uint32_t kRegexMaxPatternBytes = 1u << 16;
constexpr uint32_t kRegexMaxLookahead = 4096;

// One pattern searched over a growing text. Feed the text as it grows; Check() says whether the
// text so far has a match (and where), as regex_search would on the whole text.
class RegexSearch {
 public:
  explicit RegexSearch(const RegexProgram* program);

  // `text` is the whole output so far (it only grows; earlier bytes never change).
  void Advance(const std::string& text);
  // After Advance(text): the leftmost-first match of the whole text, if any. `slots` gets
  // 2 * (groups + 1) positions (-1 for a group that did not take part).
  bool Check(const std::string& text, std::vector<int64_t>* slots);
  // No match can ever start or continue (an anchored pattern past its chance).
  bool dead() const { return dead_; }

 private:
  struct Thread {
    uint32_t pc;
    uint32_t caps;  // offset into the list's capture pool
  };
  struct List {
    std::vector<Thread> threads;
    std::vector<int64_t> caps;
    void Clear() {
      threads.clear();
      caps.clear();
    }
  };
  struct State {
    List pending;                 // threads waiting at `pos` (before their closure)
    std::vector<int64_t> match;   // the best match so far (empty: none)
    size_t pos = 0;
  };

  // Closure of st->pending at st->pos (atEnd: no byte follows), then consume the byte there.
  void Close(State* st, const std::string& text, bool atEnd, List* out);
  void Step(State* st, const std::string& text);
  bool LookMatches(uint32_t look, const std::string& text, size_t pos);

  const RegexProgram* p_;
  uint32_t nslots_;
  State state_;
  State tail_;
  List closed_;
  std::vector<uint32_t> mark_;  // per pc: closure generation that visited it
  uint32_t generation_ = 0;
  struct Work {
    uint32_t pc;
    uint32_t caps;
  };
  std::vector<Work> work_;
  std::vector<int64_t> workCaps_;
  std::vector<uint8_t> lookA_, lookB_;
  bool dead_ = false;
};

}  // namespace lp::grammar
