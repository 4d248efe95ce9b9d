// forced.diff: the forced text of native/grammar/forced.h against a brute-force walk of llama.cpp's
// own stacks, at random reachable states. The walk tries every candidate code point with
// llama_grammar_accept (ASCII, every value a character element of the grammar names and its
// neighbours, the UTF-8 length boundaries: any set of two or more admitted code points contains two
// of them) and goes on while exactly one is admitted and no stack is empty or at a TOKEN element.
// Then the run's tokens (TokenizeForced, in context after the previous token) must spell it and
// be taken by llama.cpp's grammar, token by token, leaving the stacks our accept leaves.
//
// grammar.accepts: whether llama.cpp's grammar takes a token sequence (the model tests' check that
// fast-forwarded output is text the grammar admits).
#include <llama.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/forced.h"
#include "grammar/grammar-state.h"
#include "llama-grammar.h"
#include "llama-vocab.h"
#include "nlohmann/json.hpp"

using json = nlohmann::ordered_json;
using namespace lp::grammar;

namespace {

const llama_vocab* VocabOf(const std::string& path) {
  static std::map<std::string, llama_model*> models;
  auto it = models.find(path);
  if (it == models.end()) {
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* m = llama_model_load_from_file(path.c_str(), mp);
    if (m == nullptr) throw std::runtime_error("cannot load " + path);
    it = models.emplace(path, m).first;
  }
  return llama_model_get_vocab(it->second);
}

llama_grammar* Reference(const llama_vocab* vocab, const GrammarSpec& spec) {
  return llama_grammar_init_impl(vocab, spec.gbnf.c_str(), spec.root.c_str(), false, nullptr, 0, nullptr, 0);
}

std::vector<uint32_t> Candidates(const llama_grammar_rules& rules) {
  std::set<uint32_t> c;
  for (uint32_t v = 1; v < 0x80; v++) c.insert(v);
  for (uint32_t v : {0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) c.insert(v);
  for (const auto& rule : rules) {
    for (const auto& e : rule) {
      if (e.type != LLAMA_GRETYPE_CHAR && e.type != LLAMA_GRETYPE_CHAR_NOT && e.type != LLAMA_GRETYPE_CHAR_ALT &&
          e.type != LLAMA_GRETYPE_CHAR_RNG_UPPER) {
        continue;
      }
      for (int64_t d = -1; d <= 1; d++) {
        int64_t v = static_cast<int64_t>(e.value) + d;
        if (v >= 1 && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) c.insert(static_cast<uint32_t>(v));
      }
    }
  }
  return {c.begin(), c.end()};
}

void Utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The brute-force walk over llama.cpp's stacks (restored afterwards).
std::string BruteForced(llama_grammar* ref, const std::vector<uint32_t>& candidates, size_t maxBytes) {
  const llama_grammar_stacks saved = ref->stacks;
  std::string out;
  while (!ref->stacks.empty()) {
    bool choice = false;
    for (const auto& st : ref->stacks) choice = choice || st.empty() || st.back()->type == LLAMA_GRETYPE_TOKEN || st.back()->type == LLAMA_GRETYPE_TOKEN_NOT;
    if (choice) break;
    const llama_grammar_stacks cur = ref->stacks;
    int admitted = 0;
    uint32_t only = 0;
    llama_grammar_stacks after;
    for (uint32_t c : candidates) {
      ref->stacks = cur;
      llama_grammar_accept(ref, c);
      if (ref->stacks.empty()) continue;
      if (++admitted > 1) break;
      only = c;
      after = ref->stacks;
    }
    ref->stacks = cur;
    if (admitted != 1) break;
    std::string bytes;
    Utf8(only, &bytes);
    if (out.size() + bytes.size() > maxBytes) break;
    out += bytes;
    ref->stacks = after;
  }
  ref->stacks = saved;
  return out;
}

std::string Shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

// (rule, offset) of every element of every stack: stacks of two grammar objects compared.
std::set<std::vector<std::pair<size_t, size_t>>> Canonical(const llama_grammar_rules& rules, const llama_grammar_stacks& stacks) {
  std::set<std::vector<std::pair<size_t, size_t>>> out;
  for (const auto& st : stacks) {
    std::vector<std::pair<size_t, size_t>> v;
    for (const auto* p : st) {
      for (size_t r = 0; r < rules.size(); r++) {
        if (p >= rules[r].data() && p < rules[r].data() + rules[r].size()) {
          v.push_back({r, static_cast<size_t>(p - rules[r].data())});
          break;
        }
      }
    }
    out.insert(v);
  }
  return out;
}

bool AnyToken(const llama_vocab*, llama_token, const void*) { return true; }

bool RefAccept(llama_grammar* ref, llama_token t) {
  try {
    llama_grammar_accept_impl(*ref, t);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

json CmdForcedDiff(const json& req) {
  const llama_vocab* vocab = VocabOf(req.at("path").get<std::string>());
  GrammarSpec spec;
  spec.gbnf = req.at("gbnf").get<std::string>();
  spec.root = req.value("root", std::string("root"));
  std::mt19937 rng(req.value("seed", 1u));
  const int walks = req.value("walks", 3);
  const int steps = req.value("steps", 20);
  const size_t maxBytes = req.value("maxBytes", 4096);
  VocabIndexHolder holder;
  uint64_t states = 0, forcedStates = 0, forcedBytes = 0, mismatches = 0, tokenized = 0, untokenized = 0, tokenMismatches = 0,
           forcedTokens = 0;
  bool tokenElements = false;
  json details = json::array();
  for (int w = 0; w < walks; w++) {
    Failure f;
    auto ours = GrammarState::Create(vocab, &holder, spec, &f);
    llama_grammar* ref = Reference(vocab, spec);
    if (!ours || ref == nullptr) {
      if (ref != nullptr) llama_grammar_free_impl(ref);
      return {{"invalid", ours ? "llama.cpp rejected it" : f.message}, {"mismatch", static_cast<bool>(ours) != (ref != nullptr)}};
    }
    for (const auto& rule : ref->rules) {
      for (const auto& e : rule) tokenElements = tokenElements || e.type == LLAMA_GRETYPE_TOKEN || e.type == LLAMA_GRETYPE_TOKEN_NOT;
    }
    const std::vector<uint32_t> candidates = Candidates(ref->rules);
    const llama_grammar_rules& oursRules = ours->SyncedLlamaGrammar()->rules;
    std::vector<llama_token> path;
    std::string prevPiece;
    for (int s = 0; s <= steps; s++) {
      states++;
      const std::string mine = ours->ForcedBytes(maxBytes);
      if (!tokenElements && ours->partial().second == 0) {
        const std::string brute = BruteForced(ref, candidates, maxBytes);
        if (mine != brute) {
          mismatches++;
          if (details.size() < 8) details.push_back({{"kind", "bytes"}, {"walk", w}, {"step", s}, {"ours", Shown(mine)}, {"brute", Shown(brute)}, {"path", path}});
        }
      }
      if (!mine.empty()) {
        forcedStates++;
        forcedBytes += mine.size();
      }
      // Half the time (as generation does) take the forced run's tokens; else a random admitted token.
      std::vector<llama_token> next;
      if (!mine.empty() && std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
        next = TokenizeForced(vocab, prevPiece, mine, AnyToken, nullptr);
        std::string spelled;
        for (llama_token t : next) spelled += vocab->token_to_piece(t);
        if (next.empty()) {
          untokenized++;
        } else {
          tokenized++;
          forcedTokens += next.size();
          if (spelled != mine) {
            tokenMismatches++;
            if (details.size() < 8) details.push_back({{"kind", "spelling"}, {"walk", w}, {"step", s}, {"ours", Shown(mine)}, {"tokens", Shown(spelled)}});
          }
        }
      }
      if (next.empty()) {
        TokenBits bits;
        if (!ours->Mask(&bits, false, &f)) break;
        std::vector<llama_token> admitted;
        for (int32_t t = 0; t < llama_vocab_n_tokens(vocab); t++) {
          if (bits.Test(t) && !llama_vocab_is_eog(vocab, t)) admitted.push_back(t);
        }
        if (admitted.empty()) break;
        next.push_back(admitted[std::uniform_int_distribution<size_t>(0, admitted.size() - 1)(rng)]);
      }
      bool ok = true;
      for (llama_token t : next) {
        Failure af;
        bool oursOk = ours->Accept(t, &af);
        bool refOk = RefAccept(ref, t);
        if (oursOk != refOk || !oursOk) {
          if (oursOk != refOk) {
            tokenMismatches++;
            if (details.size() < 8) details.push_back({{"kind", "accept"}, {"walk", w}, {"step", s}, {"token", t}, {"ours", oursOk}, {"reference", refOk}});
          }
          ok = false;
          break;
        }
        path.push_back(t);
        prevPiece = vocab->token_to_piece(t);
      }
      if (!ok) break;
      if (Canonical(oursRules, ours->Stacks()) != Canonical(ref->rules, ref->stacks)) {
        tokenMismatches++;
        if (details.size() < 8) details.push_back({{"kind", "stacks"}, {"walk", w}, {"step", s}});
        break;
      }
    }
    llama_grammar_free_impl(ref);
  }
  return {{"states", states},         {"forcedStates", forcedStates}, {"forcedBytes", forcedBytes},
          {"mismatches", mismatches}, {"tokenized", tokenized},       {"untokenized", untokenized},
          {"forcedTokens", forcedTokens}, {"tokenMismatches", tokenMismatches}, {"tokenElements", tokenElements},
          {"details", details}};
}

json CmdGrammarAccepts(const json& req) {
  const llama_vocab* vocab = VocabOf(req.at("path").get<std::string>());
  GrammarSpec spec;
  spec.gbnf = req.at("gbnf").get<std::string>();
  spec.root = req.value("root", std::string("root"));
  llama_grammar* ref = Reference(vocab, spec);
  if (ref == nullptr) return {{"invalid", "llama.cpp rejected the grammar"}};
  size_t taken = 0;
  std::vector<llama_token> prefill = req.value("prefill", std::vector<llama_token>{});
  std::vector<llama_token> tokens = req.at("tokens").get<std::vector<llama_token>>();
  bool ok = true;
  for (llama_token t : prefill) ok = ok && RefAccept(ref, t);
  if (!ok) {
    llama_grammar_free_impl(ref);
    return {{"prefillRejected", true}};
  }
  for (llama_token t : tokens) {
    if (!RefAccept(ref, t)) break;
    taken++;
  }
  bool canEnd = false;
  for (const auto& st : ref->stacks) canEnd = canEnd || st.empty();
  llama_grammar_free_impl(ref);
  return {{"taken", taken}, {"of", tokens.size()}, {"canEnd", canEnd}};
}
