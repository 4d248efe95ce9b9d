#include "gbnf-limits.h"

#include <algorithm>
#include <vector>

namespace lp::grammar {
namespace {

uint64_t SatAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t SatMul(uint64_t a, uint64_t b) { return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b; }

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

}  // namespace

std::string CheckGbnfText(const std::string& s, const GbnfLimits& limits) {
  const size_t n = s.size();
  uint32_t depth = 0;
  uint64_t total = 0;
  uint64_t last = 0;  // elements of the item a quantifier would repeat
  auto at = [](size_t i) { return " at byte " + std::to_string(i); };
  for (size_t i = 0; i < n;) {
    char c = s[i];
    if (c == '#') {
      while (i < n && s[i] != '\n' && s[i] != '\r') i++;
    } else if (c == '"' || c == '[') {
      // A literal repeats as a whole (llama.cpp's parser); a class is one element per member.
      char close = c == '"' ? '"' : ']';
      uint64_t count = 0;
      size_t j = i + 1;
      while (j < n && s[j] != close) {
        j += s[j] == '\\' ? 2 : 1;
        count++;
      }
      last = std::max<uint64_t>(count, 1);
      total = SatAdd(total, last);
      i = j + 1;
    } else if (c == '<') {
      while (i < n && s[i] != '>') i++;
      i++;
      last = 1;
      total = SatAdd(total, 1);
    } else if (c == '(') {
      if (++depth > limits.maxNesting) {
        return "groups nested deeper than " + std::to_string(limits.maxNesting) + at(i);
      }
      i++;
    } else if (c == ')') {
      if (depth > 0) depth--;
      last = 1;
      total = SatAdd(total, 1);
      i++;
    } else if (c == '*' || c == '+' || c == '?') {
      total = SatAdd(total, SatMul(last + 4, 2));
      i++;
    } else if (c == '{') {
      size_t start = i++;
      auto number = [&](uint64_t* v) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        size_t from = i;
        uint64_t x = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
          x = SatAdd(SatMul(x, 10), static_cast<uint64_t>(s[i] - '0'));
          i++;
        }
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        *v = x;
        return i > from;
      };
      uint64_t lo = 0, hi = 0;
      bool unbounded = false;
      if (number(&lo)) {
        hi = lo;
        if (i < n && s[i] == ',') {
          i++;
          if (!number(&hi)) unbounded = true;
        }
        if (i < n && s[i] == '}') {
          i++;
          if (!unbounded && hi < lo) {
            return "a repetition {" + std::to_string(lo) + "," + std::to_string(hi) + "} whose minimum exceeds its maximum" + at(start);
          }
          // llama.cpp: counts over 2000 are an error (minimum) or unbounded (maximum).
          uint64_t optional = (unbounded || hi > 2000) ? 1 : hi - lo;
          total = SatAdd(total, SatAdd(SatMul(last, lo), SatMul(last + 4, optional)));
        }
      }
    } else if (IsWordChar(c)) {
      while (i < n && IsWordChar(s[i])) i++;
      last = 1;
      total = SatAdd(total, 1);
    } else {
      i++;
    }
    if (total > limits.maxElements) {
      return "the grammar expands to more than " + std::to_string(limits.maxElements) + " elements (repetitions of large items)" + at(std::min(i, n));
    }
  }
  return "";
}

std::string CheckGbnfRules(const llama_grammar_rules& rules, const std::map<std::string, uint32_t>& symbols,
                           const GbnfLimits& limits) {
  const size_t n = rules.size();
  auto nameOf = [&](size_t id) {
    for (const auto& kv : symbols) {
      if (kv.second == id) return kv.first;
    }
    return std::to_string(id);
  };
  // What llama_grammar_detect_left_recursion follows: leftmost references, and the next ones
  // while the previous may be empty (a rule "may be empty" when an alternative is empty).
  std::vector<uint8_t> mayBeEmpty(n, 0);
  for (size_t r = 0; r < n; r++) {
    bool atStart = true;
    for (const auto& e : rules[r]) {
      if (e.type == LLAMA_GRETYPE_END || e.type == LLAMA_GRETYPE_ALT) {
        if (atStart) {
          mayBeEmpty[r] = 1;
          break;
        }
        atStart = true;
      } else {
        atStart = false;
      }
    }
  }
  std::vector<std::vector<uint32_t>> edges(n);
  for (size_t r = 0; r < n; r++) {
    bool recurse = true;
    for (const auto& e : rules[r]) {
      if (e.type == LLAMA_GRETYPE_RULE_REF && recurse) {
        if (e.value < n) {
          edges[r].push_back(e.value);
          if (!mayBeEmpty[e.value]) recurse = false;
        } else {
          recurse = false;
        }
      } else if (e.type == LLAMA_GRETYPE_END || e.type == LLAMA_GRETYPE_ALT) {
        recurse = true;
      } else {
        recurse = false;
      }
    }
  }
  // Iterative depth-first search: a back edge is left recursion; finishing order gives a
  // topological order for the depth and work of llama.cpp's (recursive, unmemoized) check.
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (size_t root = 0; root < n; root++) {
    if (color[root] != 0) continue;
    stack.push_back({static_cast<uint32_t>(root), 0});
    color[root] = 1;
    while (!stack.empty()) {
      auto& [r, k] = stack.back();
      if (k < edges[r].size()) {
        uint32_t c = edges[r][k++];
        if (color[c] == 1) {
          return "unsupported grammar, left recursion detected for nonterminal '" + nameOf(c) + "'";
        }
        if (color[c] == 0) {
          color[c] = 1;
          stack.push_back({c, 0});
        }
      } else {
        color[r] = 2;
        order.push_back(r);
        stack.pop_back();
      }
    }
  }
  std::vector<uint64_t> depth(n, 1), work(n, 0);
  for (uint32_t r : order) {  // children finish before their parents
    uint64_t w = rules[r].size();
    for (uint32_t c : edges[r]) {
      depth[r] = std::max(depth[r], depth[c] + 1);
      w = SatAdd(w, work[c]);
    }
    work[r] = w;
    if (depth[r] > limits.maxLeftChain) {
      return "a chain of more than " + std::to_string(limits.maxLeftChain) + " rules, each the first item of the one before (at '" + nameOf(r) + "')";
    }
  }
  // llama.cpp runs the check from each rule not yet visited, in index order.
  std::vector<uint8_t> visited(n, 0);
  uint64_t total = 0;
  std::vector<uint32_t> todo;
  for (size_t r = 0; r < n; r++) {
    if (visited[r]) continue;
    total = SatAdd(total, work[r]);
    if (total > limits.maxLeftRecursionWork) {
      return "the grammar's rules share leftmost references so widely that llama.cpp's left-recursion check would take too long (at '" + nameOf(r) + "')";
    }
    todo.assign(1, static_cast<uint32_t>(r));
    visited[r] = 1;
    while (!todo.empty()) {
      uint32_t x = todo.back();
      todo.pop_back();
      for (uint32_t c : edges[x]) {
        if (!visited[c]) {
          visited[c] = 1;
          todo.push_back(c);
        }
      }
    }
  }
  return "";
}

}  // namespace lp::grammar
