#include "regex.h"

#include <algorithm>
#include <limits>

namespace lp::grammar {
namespace {

constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kMaxCount = 10000;

struct Node {
  enum Kind : uint8_t { kEmpty, kSet, kConcat, kAlt, kRepeat, kGroup, kBegin, kEnd, kLook };
  Kind kind = kEmpty;
  std::vector<uint32_t> kids;
  uint32_t set = 0;      // kSet: index into sets
  uint32_t min = 0, max = 0;
  bool greedy = true;
  int32_t group = -1;    // kGroup: capture index (>= 1), -1 for (?:...)
  bool negative = false; // kLook
  bool captures = false; // contains a capturing group
  bool asserts = false;  // contains ^ $ or a lookahead
  size_t offset = 0;
};

ByteSet Digits() {
  ByteSet s;
  s.AddRange('0', '9');
  return s;
}
ByteSet Spaces() {
  // isspace() in the "C" locale, which std::regex_traits<char> consults
  ByteSet s;
  s.Add(' ');
  s.AddRange('\t', '\r');
  return s;
}
ByteSet Words() {
  ByteSet s;
  s.AddRange('0', '9');
  s.AddRange('A', 'Z');
  s.AddRange('a', 'z');
  s.Add('_');
  return s;
}

class Parser {
 public:
  Parser(const std::string& src, std::vector<ByteSet>* sets) : s_(src), sets_(sets) {}

  bool Parse(uint32_t* root) {
    if (s_.size() > kRegexMaxPatternBytes) return Fail("the pattern is longer than " + std::to_string(kRegexMaxPatternBytes) + " bytes", 0);
    if (!Disjunction(root, 0)) return false;
    if (i_ < s_.size()) {
      if (s_[i_] == ')') return Fail("unmatched ')'", i_);
      return Fail("unexpected '" + std::string(1, s_[i_]) + "'", i_);
    }
    return true;
  }
  std::vector<Node> nodes;
  uint32_t groups = 0;
  std::string error;

 private:
  bool Fail(const std::string& what, size_t at) {
    if (error.empty()) error = what + " at offset " + std::to_string(at);
    return false;
  }
  uint32_t Add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  uint32_t AddSet(const ByteSet& set, size_t at) {
    sets_->push_back(set);
    Node n;
    n.kind = Node::kSet;
    n.set = static_cast<uint32_t>(sets_->size() - 1);
    n.offset = at;
    return Add(n);
  }
  bool More() const { return i_ < s_.size(); }
  char Peek() const { return s_[i_]; }

  bool Disjunction(uint32_t* out, uint32_t depth) {
    if (depth > kRegexMaxDepth) return Fail("groups nested deeper than " + std::to_string(kRegexMaxDepth), i_);
    std::vector<uint32_t> alts;
    uint32_t first;
    if (!Alternative(&first, depth)) return false;
    alts.push_back(first);
    while (More() && Peek() == '|') {
      i_++;
      uint32_t next;
      if (!Alternative(&next, depth)) return false;
      alts.push_back(next);
    }
    if (alts.size() == 1) {
      *out = first;
      return true;
    }
    Node n;
    n.kind = Node::kAlt;
    for (uint32_t a : alts) {
      n.captures |= nodes[a].captures;
      n.asserts |= nodes[a].asserts;
    }
    n.kids = std::move(alts);
    *out = Add(std::move(n));
    return true;
  }

  bool Alternative(uint32_t* out, uint32_t depth) {
    Node n;
    n.kind = Node::kConcat;
    while (More() && Peek() != '|' && Peek() != ')') {
      uint32_t term;
      if (!Term(&term, depth)) return false;
      n.captures |= nodes[term].captures;
      n.asserts |= nodes[term].asserts;
      n.kids.push_back(term);
    }
    if (n.kids.size() == 1) {
      *out = n.kids[0];
      return true;
    }
    if (n.kids.empty()) n.kind = Node::kEmpty;
    *out = Add(std::move(n));
    return true;
  }

  bool Term(uint32_t* out, uint32_t depth) {
    size_t at = i_;
    char c = Peek();
    if (c == '^' || c == '$') {
      i_++;
      Node n;
      n.kind = c == '^' ? Node::kBegin : Node::kEnd;
      n.asserts = true;
      n.offset = at;
      *out = Add(n);
      if (More() && IsQuantifierStart()) return Fail("a quantifier after an anchor", i_);
      return true;
    }
    uint32_t atom;
    bool isLook = false;
    if (!Atom(&atom, depth, &isLook)) return false;
    if (!More() || !IsQuantifierStart()) {
      *out = atom;
      return true;
    }
    if (isLook) return Fail("a quantifier after a lookahead", i_);
    Node n;
    n.kind = Node::kRepeat;
    n.offset = i_;
    if (!Quantifier(&n.min, &n.max, &n.greedy)) return false;
    if (nodes[atom].captures && n.max > 1) {
      return Fail("a capturing group inside a repetition (use (?:...) there)", at);
    }
    n.captures = nodes[atom].captures;
    n.asserts = nodes[atom].asserts;
    n.kids.push_back(atom);
    *out = Add(std::move(n));
    if (More() && IsQuantifierStart()) return Fail("two quantifiers in a row", i_);
    return true;
  }

  bool IsQuantifierStart() const {
    char c = Peek();
    return c == '*' || c == '+' || c == '?' || c == '{';
  }

  bool Number(uint32_t* v) {
    size_t start = i_;
    uint64_t n = 0;
    while (More() && Peek() >= '0' && Peek() <= '9') {
      n = n * 10 + static_cast<uint64_t>(Peek() - '0');
      if (n > kMaxCount) return Fail("a repetition count over " + std::to_string(kMaxCount), start);
      i_++;
    }
    if (i_ == start) return Fail("a repetition count expected", i_);
    *v = static_cast<uint32_t>(n);
    return true;
  }

  bool Quantifier(uint32_t* min, uint32_t* max, bool* greedy) {
    size_t at = i_;
    char c = s_[i_++];
    if (c == '*') {
      *min = 0;
      *max = kInf;
    } else if (c == '+') {
      *min = 1;
      *max = kInf;
    } else if (c == '?') {
      *min = 0;
      *max = 1;
    } else {
      if (!Number(min)) return false;
      *max = *min;
      if (More() && Peek() == ',') {
        i_++;
        if (More() && Peek() == '}') {
          *max = kInf;
        } else if (!Number(max)) {
          return false;
        }
      }
      if (!More() || Peek() != '}') return Fail("'}' expected to close the repetition", i_);
      i_++;
      if (*max < *min) return Fail("a repetition {m,n} with m > n", at);
    }
    *greedy = true;
    if (More() && Peek() == '?') {
      i_++;
      *greedy = false;
    }
    return true;
  }

  bool Atom(uint32_t* out, uint32_t depth, bool* isLook) {
    size_t at = i_;
    char c = s_[i_];
    switch (c) {
      case '(': {
        i_++;
        Node n;
        n.offset = at;
        if (More() && Peek() == '?') {
          i_++;
          if (!More()) return Fail("unterminated group", at);
          char k = s_[i_++];
          if (k == ':') {
            n.kind = Node::kGroup;
          } else if (k == '=' || k == '!') {
            n.kind = Node::kLook;
            n.negative = k == '!';
            *isLook = true;
          } else if (k == '<') {
            return Fail("lookbehind and named groups are not supported", at);
          } else {
            return Fail("unknown group type '(?" + std::string(1, k) + "'", at);
          }
        } else {
          n.kind = Node::kGroup;
          n.group = static_cast<int32_t>(++groups);
        }
        uint32_t body;
        if (!Disjunction(&body, depth + 1)) return false;
        if (!More() || Peek() != ')') return Fail("missing ')' for the group opened", at);
        i_++;
        n.kids.push_back(body);
        if (n.kind == Node::kLook) {
          if (nodes[body].captures) return Fail("a capturing group inside a lookahead", at);
          if (nodes[body].asserts) return Fail("an anchor or lookahead inside a lookahead", at);
          n.asserts = true;
        } else {
          n.captures = n.group > 0 || nodes[body].captures;
          n.asserts = nodes[body].asserts;
        }
        *out = Add(std::move(n));
        return true;
      }
      case '.': {
        i_++;
        ByteSet s;
        s.Invert();
        s.w['\n' >> 6] &= ~(1ULL << ('\n' & 63));
        s.w['\r' >> 6] &= ~(1ULL << ('\r' & 63));
        *out = AddSet(s, at);
        return true;
      }
      case '[':
        return Class(out);
      case '\\': {
        ByteSet s;
        if (!Escape(&s, false)) return false;
        *out = AddSet(s, at);
        return true;
      }
      case ')':
        return Fail("unmatched ')'", at);
      case '*':
      case '+':
      case '?':
        return Fail("a quantifier with nothing to repeat", at);
      case '{':
      case '}':
      case ']':
        return Fail("a bare '" + std::string(1, c) + "' (escape it as \\" + std::string(1, c) + ")", at);
      default: {
        i_++;
        ByteSet s;
        s.Add(static_cast<uint8_t>(c));
        *out = AddSet(s, at);
        return true;
      }
    }
  }

  bool Hex(int digits, uint32_t* v) {
    uint32_t n = 0;
    for (int k = 0; k < digits; k++) {
      if (!More()) return Fail("hex digits expected", i_);
      char c = s_[i_];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail("hex digits expected", i_);
      }
      n = n * 16 + d;
      i_++;
    }
    *v = n;
    return true;
  }

  // After '\': one byte or a class. `inClass`: \b means backspace there.
  bool Escape(ByteSet* s, bool inClass, bool* isClass = nullptr) {
    size_t at = i_;
    i_++;
    if (!More()) return Fail("a pattern that ends in '\\'", at);
    char c = s_[i_++];
    if (isClass != nullptr) *isClass = false;
    auto one = [&](uint8_t b) {
      s->Add(b);
      return true;
    };
    auto cls = [&](ByteSet set, bool negate) {
      if (negate) set.Invert();
      s->Merge(set);
      if (isClass != nullptr) *isClass = true;
      return true;
    };
    switch (c) {
      case 'd': return cls(Digits(), false);
      case 'D': return cls(Digits(), true);
      case 's': return cls(Spaces(), false);
      case 'S': return cls(Spaces(), true);
      case 'w': return cls(Words(), false);
      case 'W': return cls(Words(), true);
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'v': return one('\v');
      case 'f': return one('\f');
      case '0':
        if (More() && Peek() >= '0' && Peek() <= '9') return Fail("octal escapes are not supported", at);
        return one(0);
      case 'x': {
        uint32_t v;
        if (!Hex(2, &v)) return false;
        return one(static_cast<uint8_t>(v));
      }
      case 'u': {
        uint32_t v;
        if (!Hex(4, &v)) return false;
        if (v > 0x7F) return Fail("\\u escapes above \\u007F are not supported (std::regex matches bytes)", at);
        return one(static_cast<uint8_t>(v));
      }
      case 'b':
        if (inClass) return one('\b');
        return Fail("word boundaries (\\b) are not supported", at);
      case 'B':
        return Fail("word boundaries (\\B) are not supported", at);
      case 'c':
        return Fail("control escapes (\\c) are not supported", at);
      default:
        if (c >= '1' && c <= '9') return Fail("backreferences are not supported", at);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          return Fail("unknown escape '\\" + std::string(1, c) + "'", at);
        }
        return one(static_cast<uint8_t>(c));
    }
  }

  bool Class(uint32_t* out) {
    size_t at = i_;
    i_++;
    bool negate = false;
    if (More() && Peek() == '^') {
      negate = true;
      i_++;
    }
    ByteSet set;
    bool any = false;
    while (true) {
      if (!More()) return Fail("missing ']' for the class opened", at);
      char c = Peek();
      if (c == ']') {
        if (!any) return Fail("an empty class", at);
        i_++;
        break;
      }
      if (c == '[') return Fail("'[' inside a class (escape it as \\[)", i_);
      // One class atom, maybe the start of a range.
      uint8_t lo;
      bool loIsClass = false;
      size_t atomAt = i_;
      if (c == '\\') {
        ByteSet e;
        if (!Escape(&e, true, &loIsClass)) return false;
        if (loIsClass) {
          set.Merge(e);
          any = true;
          if (More() && Peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
            return Fail("a range that starts with a class escape", atomAt);
          }
          continue;
        }
        lo = 0;
        while (!e.Has(lo)) lo++;
      } else {
        lo = static_cast<uint8_t>(c);
        i_++;
      }
      if (More() && Peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        i_++;
        uint8_t hi;
        char d = Peek();
        if (d == '\\') {
          ByteSet e;
          bool hiIsClass = false;
          if (!Escape(&e, true, &hiIsClass)) return false;
          if (hiIsClass) return Fail("a range that ends with a class escape", atomAt);
          hi = 0;
          while (!e.Has(hi)) hi++;
        } else if (d == '[') {
          return Fail("'[' inside a class (escape it as \\[)", i_);
        } else {
          hi = static_cast<uint8_t>(d);
          i_++;
        }
        if (hi < lo) return Fail("a class range whose end comes before its start", atomAt);
        set.AddRange(lo, hi);
      } else {
        set.Add(lo);
      }
      any = true;
    }
    if (negate) set.Invert();
    *out = AddSet(set, at);
    return true;
  }

  const std::string& s_;
  std::vector<ByteSet>* sets_;
  size_t i_ = 0;
};

class Compiler {
 public:
  Compiler(const std::vector<Node>& nodes, RegexProgram* p) : nodes_(nodes), p_(p) {}

  bool Emit(uint32_t id, std::vector<RegexProgram::Inst>* out, std::string* error) {
    out_ = out;
    error_ = error;
    return Node_(id);
  }

  static uint32_t MaxLength(const std::vector<Node>& nodes, uint32_t id) {
    const Node& n = nodes[id];
    switch (n.kind) {
      case Node::kSet: return 1;
      case Node::kEmpty:
      case Node::kBegin:
      case Node::kEnd:
      case Node::kLook: return 0;
      case Node::kGroup: return MaxLength(nodes, n.kids[0]);
      case Node::kConcat: {
        uint64_t sum = 0;
        for (uint32_t k : n.kids) {
          uint32_t m = MaxLength(nodes, k);
          if (m == kInf) return kInf;
          sum += m;
          if (sum > kRegexMaxLookahead) return kInf;
        }
        return static_cast<uint32_t>(sum);
      }
      case Node::kAlt: {
        uint32_t best = 0;
        for (uint32_t k : n.kids) best = std::max(best, MaxLength(nodes, k));
        return best;
      }
      case Node::kRepeat: {
        uint32_t m = MaxLength(nodes, n.kids[0]);
        if (m == 0) return 0;
        if (m == kInf || n.max == kInf) return kInf;
        uint64_t total = static_cast<uint64_t>(m) * n.max;
        return total > kRegexMaxLookahead ? kInf : static_cast<uint32_t>(total);
      }
    }
    return kInf;
  }

 private:
  using Inst = RegexProgram::Inst;
  uint32_t Pc() const { return static_cast<uint32_t>(out_->size()); }
  bool Push(Inst inst) {
    if (out_->size() >= kRegexMaxProgram) {
      if (error_->empty()) *error_ = "the pattern compiles to more than " + std::to_string(kRegexMaxProgram) + " instructions";
      return false;
    }
    out_->push_back(inst);
    return true;
  }

  bool Node_(uint32_t id) {
    const Node& n = nodes_[id];
    switch (n.kind) {
      case Node::kEmpty:
        return true;
      case Node::kSet:
        return Push({RegexProgram::kByte, n.set, 0});
      case Node::kBegin:
        return Push({RegexProgram::kBegin, 0, 0});
      case Node::kEnd:
        return Push({RegexProgram::kEnd, 0, 0});
      case Node::kConcat:
        for (uint32_t k : n.kids) {
          if (!Node_(k)) return false;
        }
        return true;
      case Node::kGroup:
        if (n.group > 0 && !Push({RegexProgram::kSave, static_cast<uint32_t>(2 * n.group), 0})) return false;
        if (!Node_(n.kids[0])) return false;
        if (n.group > 0 && !Push({RegexProgram::kSave, static_cast<uint32_t>(2 * n.group + 1), 0})) return false;
        return true;
      case Node::kAlt: {
        // split L1, next; L1: a; jmp end; next: split L2, ... ; last: z; end:
        std::vector<uint32_t> jumps;
        for (size_t k = 0; k < n.kids.size(); k++) {
          bool last = k + 1 == n.kids.size();
          uint32_t split = Pc();
          if (!last && !Push({RegexProgram::kSplit, 0, 0})) return false;
          if (!last) (*out_)[split].x = Pc();
          if (!Node_(n.kids[k])) return false;
          if (!last) {
            jumps.push_back(Pc());
            if (!Push({RegexProgram::kJmp, 0, 0})) return false;
            (*out_)[split].y = Pc();
          }
        }
        for (uint32_t j : jumps) (*out_)[j].x = Pc();
        return true;
      }
      case Node::kRepeat: {
        for (uint32_t k = 0; k < n.min; k++) {
          if (!Node_(n.kids[0])) return false;
        }
        if (n.max == kInf) {
          uint32_t loop = Pc();
          if (!Push({RegexProgram::kSplit, 0, 0})) return false;
          uint32_t body = Pc();
          if (!Node_(n.kids[0])) return false;
          if (!Push({RegexProgram::kJmp, loop, 0})) return false;
          uint32_t exit = Pc();
          (*out_)[loop].x = n.greedy ? body : exit;
          (*out_)[loop].y = n.greedy ? exit : body;
          return true;
        }
        std::vector<uint32_t> splits;
        for (uint32_t k = n.min; k < n.max; k++) {
          splits.push_back(Pc());
          if (!Push({RegexProgram::kSplit, 0, 0})) return false;
          uint32_t body = Pc();
          (*out_)[splits.back()].x = body;  // patched below for lazy
          if (!Node_(n.kids[0])) return false;
        }
        uint32_t exit = Pc();
        for (uint32_t s : splits) {
          uint32_t body = s + 1;
          (*out_)[s].x = n.greedy ? body : exit;
          (*out_)[s].y = n.greedy ? exit : body;
        }
        return true;
      }
      case Node::kLook: {
        RegexProgram::Look look;
        look.maxLength = MaxLength(nodes_, n.kids[0]);
        if (look.maxLength == kInf) {
          if (error_->empty()) {
            *error_ = "a lookahead that can match more than " + std::to_string(kRegexMaxLookahead) + " bytes at offset " + std::to_string(n.offset);
          }
          return false;
        }
        Compiler sub(nodes_, p_);
        if (!sub.Emit(n.kids[0], &look.body, error_)) return false;
        look.body.push_back({RegexProgram::kMatch, 0, 0});
        p_->lookahead = std::max(p_->lookahead, look.maxLength);
        p_->looks.push_back(std::move(look));
        return Push({RegexProgram::kLook, static_cast<uint32_t>(p_->looks.size() - 1), n.negative ? 1u : 0u});
      }
    }
    return false;
  }

  const std::vector<Node>& nodes_;
  RegexProgram* p_;
  std::vector<Inst>* out_ = nullptr;
  std::string* error_ = nullptr;
};

// Epsilon paths from the start: the bytes a match can begin with (when it cannot be empty), and
// whether every path passes ^ first.
void AnalyzeStart(RegexProgram* p) {
  std::vector<uint8_t> seen(p->insts.size(), 0);
  std::vector<std::pair<uint32_t, bool>> todo{{0, false}};
  bool emptyOrEnd = false, unanchored = false;
  ByteSet first;
  while (!todo.empty()) {
    auto [pc, anchored] = todo.back();
    todo.pop_back();
    uint8_t bit = anchored ? 2 : 1;
    if (seen[pc] & bit) continue;
    seen[pc] |= bit;
    const auto& in = p->insts[pc];
    switch (in.op) {
      case RegexProgram::kByte:
        first.Merge(p->sets[in.x]);
        if (!anchored) unanchored = true;
        break;
      case RegexProgram::kMatch:
      case RegexProgram::kEnd:
        emptyOrEnd = true;
        if (!anchored) unanchored = true;
        break;
      case RegexProgram::kSplit:
        todo.push_back({in.x, anchored});
        todo.push_back({in.y, anchored});
        break;
      case RegexProgram::kJmp:
        todo.push_back({in.x, anchored});
        break;
      case RegexProgram::kBegin:
        todo.push_back({pc + 1, true});
        break;
      case RegexProgram::kSave:
      case RegexProgram::kLook:
        todo.push_back({pc + 1, anchored});
        break;
    }
  }
  p->prefilter = !emptyOrEnd;
  p->first = first;
  p->anchoredStart = !unanchored;
}

}  // namespace

std::unique_ptr<RegexProgram> CompileRegex(const std::string& pattern, bool requireEnd, std::string* error) {
  auto p = std::make_unique<RegexProgram>();
  Parser parser(pattern, &p->sets);
  uint32_t root = 0;
  if (!parser.Parse(&root)) {
    *error = parser.error;
    return nullptr;
  }
  p->groups = parser.groups;
  // A plain byte string (the escaped trigger words): searched by the multi-pattern automaton.
  const Node& r = parser.nodes[root];
  auto literalByte = [&](uint32_t id, uint8_t* b) {
    const Node& n = parser.nodes[id];
    if (n.kind != Node::kSet || p->sets[n.set].Count() != 1) return false;
    uint8_t c = 0;
    while (!p->sets[n.set].Has(c)) c++;
    *b = c;
    return true;
  };
  uint8_t b;
  if (r.kind == Node::kSet && literalByte(root, &b)) {
    p->isLiteral = true;
    p->literal.assign(1, static_cast<char>(b));
  } else if (r.kind == Node::kConcat) {
    std::string lit;
    bool ok = true;
    for (uint32_t k : r.kids) {
      if (!literalByte(k, &b)) {
        ok = false;
        break;
      }
      lit.push_back(static_cast<char>(b));
    }
    if (ok) {
      p->isLiteral = true;
      p->literal = lit;
    }
  }
  if (p->isLiteral && requireEnd) p->isLiteral = false;
  // [Save 0] pattern [End] [Save 1] Match
  p->insts.push_back({RegexProgram::kSave, 0, 0});
  Compiler compiler(parser.nodes, p.get());
  std::string compileError;
  if (!compiler.Emit(root, &p->insts, &compileError)) {
    *error = compileError;
    return nullptr;
  }
  if (requireEnd) p->insts.push_back({RegexProgram::kEnd, 0, 0});
  p->insts.push_back({RegexProgram::kSave, 1, 0});
  p->insts.push_back({RegexProgram::kMatch, 0, 0});
  if (p->insts.size() > kRegexMaxProgram) {
    *error = "the pattern compiles to more than " + std::to_string(kRegexMaxProgram) + " instructions";
    return nullptr;
  }
  AnalyzeStart(p.get());
  return p;
}

// ---------------------------------------------------------------------------------------------
// The VM

RegexSearch::RegexSearch(const RegexProgram* program) : p_(program), nslots_(2 * (program->groups + 1)) {
  mark_.assign(p_->insts.size(), 0);
}

bool RegexSearch::LookMatches(uint32_t look, const std::string& text, size_t pos) {
  const auto& body = p_->looks[look].body;
  const size_t end = std::min(text.size(), pos + p_->looks[look].maxLength);
  lookA_.assign(body.size(), 0);
  // Epsilon closure over a set of pcs (bodies have no captures or assertions).
  auto close = [&](std::vector<uint8_t>* set) {
    std::vector<uint32_t> todo;
    for (uint32_t pc = 0; pc < body.size(); pc++) {
      if ((*set)[pc]) todo.push_back(pc);
    }
    bool matched = false;
    while (!todo.empty()) {
      uint32_t pc = todo.back();
      todo.pop_back();
      const auto& in = body[pc];
      auto add = [&](uint32_t t) {
        if (!(*set)[t]) {
          (*set)[t] = 1;
          todo.push_back(t);
        }
      };
      if (in.op == RegexProgram::kMatch) matched = true;
      if (in.op == RegexProgram::kSplit) {
        add(in.x);
        add(in.y);
      } else if (in.op == RegexProgram::kJmp) {
        add(in.x);
      }
    }
    return matched;
  };
  lookA_[0] = 1;
  if (close(&lookA_)) return true;
  for (size_t i = pos; i < end; i++) {
    lookB_.assign(body.size(), 0);
    bool any = false;
    uint8_t c = static_cast<uint8_t>(text[i]);
    for (uint32_t pc = 0; pc < body.size(); pc++) {
      if (lookA_[pc] && body[pc].op == RegexProgram::kByte && p_->sets[body[pc].x].Has(c)) {
        lookB_[pc + 1] = 1;
        any = true;
      }
    }
    if (!any) return false;
    lookA_.swap(lookB_);
    if (close(&lookA_)) return true;
  }
  return false;
}

void RegexSearch::Close(State* st, const std::string& text, bool atEnd, List* out) {
  out->Clear();
  if (++generation_ == 0) {
    std::fill(mark_.begin(), mark_.end(), 0);
    generation_ = 1;
  }
  const size_t pos = st->pos;
  workCaps_.clear();
  auto run = [&](uint32_t startPc, const int64_t* caps) {
    work_.clear();
    uint32_t base = static_cast<uint32_t>(workCaps_.size());
    workCaps_.insert(workCaps_.end(), caps, caps + nslots_);
    work_.push_back({startPc, base});
    while (!work_.empty()) {
      Work w = work_.back();
      work_.pop_back();
      if (mark_[w.pc] == generation_) continue;
      mark_[w.pc] = generation_;
      const auto& in = p_->insts[w.pc];
      switch (in.op) {
        case RegexProgram::kByte:
        case RegexProgram::kMatch: {
          uint32_t at = static_cast<uint32_t>(out->caps.size());
          out->caps.insert(out->caps.end(), workCaps_.begin() + w.caps, workCaps_.begin() + w.caps + nslots_);
          out->threads.push_back({w.pc, at});
          break;
        }
        case RegexProgram::kJmp:
          work_.push_back({in.x, w.caps});
          break;
        case RegexProgram::kSplit:
          work_.push_back({in.y, w.caps});
          work_.push_back({in.x, w.caps});
          break;
        case RegexProgram::kSave: {
          uint32_t copy = static_cast<uint32_t>(workCaps_.size());
          for (uint32_t k = 0; k < nslots_; k++) workCaps_.push_back(workCaps_[w.caps + k]);
          workCaps_[copy + in.x] = static_cast<int64_t>(pos);
          work_.push_back({w.pc + 1, copy});
          break;
        }
        case RegexProgram::kBegin:
          if (pos == 0) work_.push_back({w.pc + 1, w.caps});
          break;
        case RegexProgram::kEnd:
          if (atEnd) work_.push_back({w.pc + 1, w.caps});
          break;
        case RegexProgram::kLook:
          if (LookMatches(in.x, text, pos) != (in.y != 0)) work_.push_back({w.pc + 1, w.caps});
          break;
      }
    }
  };
  const List& pending = st->pending;
  for (const Thread& t : pending.threads) run(t.pc, pending.caps.data() + t.caps);
  if (st->match.empty() && (!p_->anchoredStart || pos == 0)) {
    std::vector<int64_t> fresh(nslots_, -1);
    run(0, fresh.data());
  }
}

void RegexSearch::Step(State* st, const std::string& text) {
  Close(st, text, false, &closed_);
  const uint8_t c = static_cast<uint8_t>(text[st->pos]);
  List next;
  for (const Thread& t : closed_.threads) {
    const auto& in = p_->insts[t.pc];
    if (in.op == RegexProgram::kMatch) {
      st->match.assign(closed_.caps.begin() + t.caps, closed_.caps.begin() + t.caps + nslots_);
      break;  // lower-priority threads lose to this match
    }
    if (p_->sets[in.x].Has(c)) {
      uint32_t at = static_cast<uint32_t>(next.caps.size());
      next.caps.insert(next.caps.end(), closed_.caps.begin() + t.caps, closed_.caps.begin() + t.caps + nslots_);
      next.threads.push_back({t.pc + 1, at});
    }
  }
  st->pending = std::move(next);
  st->pos++;
}

void RegexSearch::Advance(const std::string& text) {
  if (dead_) return;
  const size_t lag = std::max<size_t>(p_->lookahead, 1);
  while (state_.pos + lag <= text.size()) {
    if (state_.pending.threads.empty() && state_.match.empty()) {
      if (p_->anchoredStart && state_.pos > 0) {
        dead_ = true;
        return;
      }
      if (p_->prefilter && !p_->first.Has(static_cast<uint8_t>(text[state_.pos]))) {
        state_.pos++;
        continue;
      }
    }
    Step(&state_, text);
  }
}

bool RegexSearch::Check(const std::string& text, std::vector<int64_t>* slots) {
  if (dead_) return false;
  tail_ = state_;
  while (tail_.pos < text.size()) Step(&tail_, text);
  Close(&tail_, text, true, &closed_);
  for (const Thread& t : closed_.threads) {
    if (p_->insts[t.pc].op == RegexProgram::kMatch) {
      tail_.match.assign(closed_.caps.begin() + t.caps, closed_.caps.begin() + t.caps + nslots_);
      break;
    }
  }
  if (tail_.match.empty()) return false;
  *slots = tail_.match;
  return true;
}

}  // namespace lp::grammar
