#include "parse.h"

#include <string>
#include <vector>

#include "gbnf-limits.h"

namespace lp::grammar {
namespace {

// Whitespace and '#' comments, as GBNF allows them before the first rule.
const char* SkipSpaceAndComments(const char* pos) {
  while (*pos) {
    if (*pos == ' ' || *pos == '\t' || *pos == '\r' || *pos == '\n') {
      pos++;
    } else if (*pos == '#') {
      while (*pos && *pos != '\n' && *pos != '\r') pos++;
    } else {
      break;
    }
  }
  return pos;
}

std::string Excerpt(const std::string& message) {
  // llama.cpp's messages end with the rest of the grammar text ("expecting ::= at <rest>"); keep
  // the line where it failed, not the whole remainder.
  size_t nl = message.find('\n');
  std::string out = nl == std::string::npos ? message : message.substr(0, nl);
  if (out.size() > 200) out = out.substr(0, 200) + "...";
  return out;
}

Failure Invalid(const std::string& detail) { return {kInvalid, "invalid GBNF grammar: " + detail}; }

}  // namespace

llama_grammar* ParseGrammar(const llama_vocab* vocab, const GrammarSpec& spec, Failure* failure, size_t* rootRule) {
  std::string limit = CheckGbnfText(spec.gbnf);
  if (!limit.empty()) {
    *failure = Invalid(limit);
    return nullptr;
  }
  // llama.cpp's parser, driven rule by rule so its exception text reaches the caller.
  llama_grammar_parser parser(vocab);
  try {
    const char* pos = SkipSpaceAndComments(spec.gbnf.c_str());
    while (*pos) pos = parser.parse_rule(pos);
  } catch (const std::exception& e) {
    *failure = Invalid(Excerpt(e.what()));
    return nullptr;
  }
  // Every referenced rule must be defined (a reference alone creates the symbol).
  for (const auto& kv : parser.symbol_ids) {
    if (kv.second >= parser.rules.size() || parser.rules[kv.second].empty()) {
      *failure = Invalid("Undefined rule identifier '" + kv.first + "'");
      return nullptr;
    }
  }
  if (parser.rules.empty()) {
    *failure = Invalid("no rules");
    return nullptr;
  }
  auto root = parser.symbol_ids.find(spec.root);
  if (root == parser.symbol_ids.end()) {
    *failure = Invalid("grammar does not contain a '" + spec.root + "' symbol");
    return nullptr;
  }
  limit = CheckGbnfRules(parser.rules, parser.symbol_ids);
  if (!limit.empty()) {
    *failure = Invalid(limit);
    return nullptr;
  }
  if (rootRule != nullptr) *rootRule = root->second;
  std::vector<const llama_grammar_element*> rules = parser.c_rules();
  llama_grammar* grammar = nullptr;
  try {
    grammar = llama_grammar_init_impl(vocab, rules.data(), rules.size(), root->second);
  } catch (const std::exception& e) {
    *failure = Invalid(e.what());
    return nullptr;
  }
  if (grammar == nullptr) *failure = Invalid("llama.cpp rejected it");
  return grammar;
}

}  // namespace lp::grammar
