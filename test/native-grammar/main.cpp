// llamapeg-grammar-test: native/grammar next to llama.cpp's own grammar code, on vocab-only models.
//
// Protocol: one JSON request per line on stdin ({"id", "cmd", ...}), one JSON answer per line on
// stdout ({"id", "ok", "result"} or {"id", "ok": false, "error"}). Commands:
//   vocab        {path}                                  -> trie size, kinds, build time
//   mask.diff    {path, gbnf, root?, seed, walks, steps} -> our mask / accept vs llama.cpp's at
//                                                           random reachable states
//   trigger.diff {path, gbnf, patterns, tokens, texts, checkSteps} -> lazy grammar vs llama.cpp's
//   regex.diff   {patterns, texts, seed}                 -> TriggerMatcher vs std::regex (llama's find)
//   mask.bench   {path, gbnf, prefixes, repeat, warmStates | warmAll} -> mask times at positions
//   trigger.bench {path, gbnf, patterns, tokens, n, referenceTokens, window} -> trigger cost per token
//   sampler.diff {seed, cases, steps, nVocab | path, grammars?} -> the Sampler's fast path vs its
//                                                           full path (sampler-diff.cpp)
//   sampler.bench {nVocab, steps, temperature?, topK?, ...} -> µs per token, fast and full path
//   schema.check {path, gbnf, instances: [text], timeMask?} -> per instance: accepted (every token
//                                                           admitted, then end of text), the token it
//                                                           failed at; mask µs per token when timed
//                                                           (scripts/bench-schemas.mjs, MaskBench)
//   forced.diff  {path, gbnf, root?, seed, walks, steps} -> forced text (grammar/forced.h) vs a
//                                                           brute-force walk of llama.cpp's stacks
//                                                           over code points, and its tokens
//   grammar.accepts {path, gbnf, root?, tokens, prefill?} -> does llama.cpp's grammar take them all
#include <llama.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "grammar/forced.h"
#include "grammar/grammar-state.h"
#include "grammar/triggers.h"
#include "grammar/vocab-index.h"
#include "llama-grammar.h"
#include "llama-vocab.h"
#include "nlohmann/json.hpp"

using json = nlohmann::ordered_json;
using namespace lp::grammar;

json CmdSamplerDiff(const json& req);   // sampler-diff.cpp
json CmdSamplerBench(const json& req);  // sampler-diff.cpp
json CmdForcedDiff(const json& req);     // forced-diff.cpp
json CmdGrammarAccepts(const json& req); // forced-diff.cpp

namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct LoadedVocab {
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
  VocabIndexHolder holder;
};

std::map<std::string, std::unique_ptr<LoadedVocab>>& Vocabs() {
  static std::map<std::string, std::unique_ptr<LoadedVocab>> v;
  return v;
}

LoadedVocab& Load(const std::string& path) {
  auto& all = Vocabs();
  auto it = all.find(path);
  if (it != all.end()) return *it->second;
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  if (model == nullptr) throw std::runtime_error("cannot load " + path);
  auto v = std::make_unique<LoadedVocab>();
  v->model = model;
  v->vocab = llama_model_get_vocab(model);
  LoadedVocab& ref = *v;
  all.emplace(path, std::move(v));
  return ref;
}

std::vector<llama_token> Tokenize(const llama_vocab* vocab, const std::string& text) {
  std::vector<llama_token> out(text.size() + 8);
  int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), false, true);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), false, true);
  }
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

// Element pointers of two grammars differ; (rule, offset) pairs compare across them.
class Canon {
 public:
  explicit Canon(const llama_grammar_rules& rules) {
    for (size_t r = 0; r < rules.size(); r++) bases_.push_back({rules[r].data(), {r, rules[r].size()}});
    std::sort(bases_.begin(), bases_.end());
  }
  std::set<std::vector<std::pair<size_t, size_t>>> Of(const llama_grammar_stacks& stacks) const {
    std::set<std::vector<std::pair<size_t, size_t>>> out;
    for (const auto& s : stacks) {
      std::vector<std::pair<size_t, size_t>> v;
      for (const auto* p : s) {
        auto it = std::upper_bound(bases_.begin(), bases_.end(), std::make_pair(p, std::make_pair(SIZE_MAX, SIZE_MAX)));
        --it;
        v.push_back({it->second.first, static_cast<size_t>(p - it->first)});
      }
      out.insert(v);
    }
    return out;
  }

 private:
  std::vector<std::pair<const llama_grammar_element*, std::pair<size_t, size_t>>> bases_;
};

std::vector<uint8_t> ReferenceMask(llama_grammar* g, int32_t n) {
  std::vector<llama_token_data> cand(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; i++) cand[i] = {i, 0.0f, 0.0f};
  llama_token_data_array arr{cand.data(), cand.size(), -1, false};
  llama_grammar_apply_impl(*g, &arr);
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; i++) out[i] = cand[i].logit != -INFINITY;
  return out;
}

json TokenList(const llama_vocab* vocab, const std::vector<llama_token>& ids, size_t max) {
  json out = json::array();
  for (size_t i = 0; i < ids.size() && i < max; i++) out.push_back({{"id", ids[i]}, {"piece", json::binary_t()}});
  for (size_t i = 0; i < out.size(); i++) {
    const std::string& p = vocab->token_to_piece(ids[i]);
    std::string shown;
    for (unsigned char c : p) {
      if (c >= 0x20 && c < 0x7F && c != '\\') {
        shown.push_back(static_cast<char>(c));
      } else {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\x%02X", c);
        shown += buf;
      }
    }
    out[i]["piece"] = shown;
  }
  return out;
}

GrammarSpec SpecOf(const json& req) {
  GrammarSpec spec;
  spec.gbnf = req.at("gbnf").get<std::string>();
  spec.root = req.value("root", std::string("root"));
  if (req.contains("patterns")) {
    spec.lazy = true;
    spec.triggerPatterns = req.at("patterns").get<std::vector<std::string>>();
    spec.triggerTokens = req.value("tokens", std::vector<llama_token>{});
  }
  return spec;
}

llama_grammar* ReferenceGrammar(const llama_vocab* vocab, const GrammarSpec& spec) {
  std::vector<const char*> patterns;
  for (const auto& p : spec.triggerPatterns) patterns.push_back(p.c_str());
  return llama_grammar_init_impl(vocab, spec.gbnf.c_str(), spec.root.c_str(), spec.lazy, patterns.data(), patterns.size(),
                                 spec.triggerTokens.data(), spec.triggerTokens.size());
}

struct Compare {
  json mismatches = json::array();
  uint64_t maskMismatch = 0, stackMismatch = 0, admitsMismatch = 0;
  double oursMs = 0, refMs = 0;
  uint64_t states = 0;

  // Our state vs the reference grammar: stacks, partial character, admitted set, single checks.
  void Check(const llama_vocab* vocab, GrammarState* ours, llama_grammar* ref, const Canon& canonOurs, const Canon& canonRef,
             std::mt19937* rng, const json& where, std::vector<uint8_t>* refMaskOut) {
    states++;
    const int32_t n = llama_vocab_n_tokens(vocab);
    auto stacksOurs = canonOurs.Of(ours->Stacks());
    auto stacksRef = canonRef.Of(ref->stacks);
    auto partial = ours->partial();
    bool partialSame = partial.second == ref->partial_utf8.n_remain &&
                       (partial.second <= 0 || partial.first == ref->partial_utf8.value);
    if (stacksOurs != stacksRef || !partialSame) {
      stackMismatch++;
      if (mismatches.size() < 8) {
        mismatches.push_back({{"kind", "stacks"}, {"where", where}, {"ours", stacksOurs.size()}, {"reference", stacksRef.size()}});
      }
    }
    TokenBits bits;
    Failure f;
    auto t0 = Clock::now();
    bool ok = ours->Mask(&bits, false, &f);
    oursMs += MsSince(t0);
    if (!ok) {
      mismatches.push_back({{"kind", "error"}, {"where", where}, {"message", f.message}});
      maskMismatch++;
      return;
    }
    t0 = Clock::now();
    std::vector<uint8_t> refMask = ReferenceMask(ref, n);
    refMs += MsSince(t0);
    std::vector<llama_token> onlyOurs, onlyRef;
    for (int32_t t = 0; t < n; t++) {
      if (bits.Test(t) && !refMask[t]) onlyOurs.push_back(t);
      if (!bits.Test(t) && refMask[t]) onlyRef.push_back(t);
    }
    if (!onlyOurs.empty() || !onlyRef.empty()) {
      maskMismatch++;
      if (mismatches.size() < 8) {
        mismatches.push_back({{"kind", "mask"},
                              {"where", where},
                              {"onlyOurs", TokenList(vocab, onlyOurs, 12)},
                              {"onlyReference", TokenList(vocab, onlyRef, 12)},
                              {"counts", {onlyOurs.size(), onlyRef.size()}}});
      }
    }
    // The single-token check the sampler uses first, on a sample of tokens.
    std::uniform_int_distribution<int32_t> any(0, n - 1);
    for (int k = 0; k < 64; k++) {
      llama_token t = any(*rng);
      Failure g;
      bool admits = ours->Admits(t, &g);
      if (admits != (refMask[t] != 0)) {
        admitsMismatch++;
        if (mismatches.size() < 8) mismatches.push_back({{"kind", "admits"}, {"where", where}, {"token", TokenList(vocab, {t}, 1)}, {"reference", refMask[t] != 0}});
      }
    }
    if (refMaskOut) *refMaskOut = std::move(refMask);
  }

  json Result() const {
    return {{"states", states},
            {"maskMismatches", maskMismatch},
            {"stackMismatches", stackMismatch},
            {"admitsMismatches", admitsMismatch},
            {"oursMs", oursMs},
            {"referenceMs", refMs},
            {"mismatches", mismatches}};
  }
};

json CmdVocab(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  auto index = v.holder.Get(v.vocab);
  return {{"nVocab", index->nVocab}, {"nodes", index->nodes()}, {"slow", index->slow.size()}, {"eog", index->eog.size()},
          {"maxDepth", index->maxDepth}, {"buildMs", index->buildMs}};
}

// The state for the next walk: with `reuse`, the previous walk's state reset to its start (the
// addon's grammar pool; *resetFailed when that fails), else a new one.
std::unique_ptr<GrammarState> NextState(LoadedVocab& v, const GrammarSpec& spec, bool reuse, std::unique_ptr<GrammarState>* kept, Failure* f,
                                        bool* resetFailed) {
  if (reuse && *kept) {
    if (!(*kept)->Reset(spec, f)) {
      *resetFailed = true;
      return nullptr;
    }
    return std::move(*kept);
  }
  return GrammarState::Create(v.vocab, &v.holder, spec, f);
}

json CmdMaskDiff(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  GrammarSpec spec = SpecOf(req);
  std::mt19937 rng(req.value("seed", 1u));
  const int walks = req.value("walks", 4);
  const int steps = req.value("steps", 20);
  // reuse: one state for all walks, reset between them (the addon's grammar pool); the reference
  // is fresh every walk, so a reset that leaves anything behind shows as a mismatch
  const bool reuse = req.value("reuse", false);
  std::unique_ptr<GrammarState> kept;
  Compare cmp;
  uint64_t acceptMismatch = 0, sharedHits = 0, localHits = 0;
  json pathExample = json::array();
  for (int w = 0; w < walks; w++) {
    Failure f;
    bool resetFailed = false;
    std::unique_ptr<GrammarState> ours = NextState(v, spec, reuse, &kept, &f, &resetFailed);
    if (resetFailed) return {{"invalid", "reset: " + f.message}, {"mismatch", true}};
    llama_grammar* ref = ReferenceGrammar(v.vocab, spec);
    if (!ours || ref == nullptr) {
      bool same = !ours && ref == nullptr;
      if (ref != nullptr) llama_grammar_free_impl(ref);
      json out = {{"invalid", ours ? "llama.cpp rejected it but we accepted it" : f.message}};
      if (!same) out["mismatch"] = true;
      return out;
    }
    // entries this state takes from earlier grammars' (shared-entries.h), counted from here
    const uint64_t sharedBefore = ours->maskStats() != nullptr ? ours->maskStats()->sharedHits : 0;
    const uint64_t localBefore = ours->maskStats() != nullptr ? ours->maskStats()->localHits : 0;
    if (req.value("warmAll", false) && !ours->Warm(0, &f)) return {{"invalid", f.message}, {"mismatch", true}};
    Canon canonOurs(ours->SyncedLlamaGrammar()->rules), canonRef(ref->rules);
    std::vector<llama_token> path;
    for (int s = 0; s <= steps; s++) {
      std::vector<uint8_t> mask;
      cmp.Check(v.vocab, ours.get(), ref, canonOurs, canonRef, &rng, {{"walk", w}, {"step", s}, {"path", path}}, &mask);
      if (mask.empty() || s == steps) break;
      std::vector<llama_token> admitted, shortOnes;
      for (int32_t t = 0; t < static_cast<int32_t>(mask.size()); t++) {
        if (!mask[t] || llama_vocab_is_eog(v.vocab, t)) continue;
        admitted.push_back(t);
        if (v.vocab->token_to_piece(t).size() <= 2) shortOnes.push_back(t);
      }
      if (admitted.empty()) break;
      const auto& pool = (!shortOnes.empty() && std::uniform_int_distribution<int>(0, 9)(rng) < 4) ? shortOnes : admitted;
      llama_token t = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
      path.push_back(t);
      Failure af;
      bool oursOk = ours->Accept(t, &af);
      bool refOk = true;
      try {
        llama_grammar_accept_impl(*ref, t);
      } catch (const std::exception&) {
        refOk = false;
      }
      if (oursOk != refOk) {
        acceptMismatch++;
        cmp.mismatches.push_back({{"kind", "accept"}, {"walk", w}, {"step", s}, {"ours", oursOk}, {"reference", refOk}, {"message", af.message}});
      }
      if (!oursOk || !refOk) break;
    }
    if (w == 0) pathExample = TokenList(v.vocab, path, 40);
    llama_grammar_free_impl(ref);
    if (const MaskStats* st = ours->maskStats(); st != nullptr) {
      sharedHits += st->sharedHits >= sharedBefore ? st->sharedHits - sharedBefore : st->sharedHits;
      localHits += st->localHits >= localBefore ? st->localHits - localBefore : st->localHits;
    }
    kept = std::move(ours);
  }
  json out = cmp.Result();
  out["acceptMismatches"] = acceptMismatch;
  out["sharedHits"] = sharedHits;
  out["localHits"] = localHits;
  out["examplePath"] = pathExample;
  return out;
}

json CmdTriggerDiff(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  GrammarSpec spec = SpecOf(req);
  std::mt19937 rng(req.value("seed", 1u));
  const int checkSteps = req.value("checkSteps", 3);
  Compare cmp;
  json outcomes = json::array();
  uint64_t triggerMismatch = 0, acceptMismatch = 0, triggered = 0;
  const bool reuse = req.value("reuse", false);  // as mask.diff: one state, reset between texts
  std::unique_ptr<GrammarState> kept;
  for (const auto& textJson : req.at("texts")) {
    std::string text = textJson.get<std::string>();
    std::vector<llama_token> tokens;
    for (llama_token t : Tokenize(v.vocab, text)) {
      if (!llama_vocab_is_eog(v.vocab, t)) tokens.push_back(t);
    }
    Failure f;
    bool resetFailed = false;
    std::unique_ptr<GrammarState> ours = NextState(v, spec, reuse, &kept, &f, &resetFailed);
    if (resetFailed) return {{"invalid", "reset: " + f.message}, {"mismatch", true}};
    if (!ours) return {{"invalid", f.message}};
    llama_grammar* ref = ReferenceGrammar(v.vocab, spec);
    if (ref == nullptr) return {{"invalid", "llama.cpp rejected it but we accepted it"}, {"mismatch", true}};
    Canon canonOurs(ours->SyncedLlamaGrammar()->rules), canonRef(ref->rules);
    int refAt = -1, oursAt = -1;
    bool failed = false;
    for (size_t i = 0; i < tokens.size() && refAt < 0; i++) {
      Failure af;
      bool oursOk = ours->Accept(tokens[i], &af);
      bool refOk = true;
      try {
        llama_grammar_accept_impl(*ref, tokens[i]);
      } catch (const std::exception&) {
        refOk = false;
      }
      if (!ref->awaiting_trigger) refAt = static_cast<int>(i);
      if (oursAt < 0 && !ours->awaitingTrigger()) oursAt = static_cast<int>(i);
      if (oursOk != refOk) {
        acceptMismatch++;
        if (cmp.mismatches.size() < 8) cmp.mismatches.push_back({{"kind", "accept"}, {"text", text}, {"token", i}, {"ours", oursOk}, {"reference", refOk}, {"message", af.message}});
      }
      if (!oursOk || !refOk) failed = true;
      if (failed) break;
    }
    // From the trigger on: the same constrained tokens, along a random path the grammar admits.
    if (refAt >= 0 && !failed && oursAt == refAt) {
      for (int k = 0; k <= checkSteps; k++) {
        std::vector<uint8_t> mask;
        cmp.Check(v.vocab, ours.get(), ref, canonOurs, canonRef, &rng, {{"text", text}, {"afterTrigger", k}}, &mask);
        if (mask.empty() || k == checkSteps) break;
        std::vector<llama_token> admitted;
        for (int32_t t = 0; t < static_cast<int32_t>(mask.size()); t++) {
          if (mask[t] && !llama_vocab_is_eog(v.vocab, t)) admitted.push_back(t);
        }
        if (admitted.empty()) break;
        llama_token t = admitted[std::uniform_int_distribution<size_t>(0, admitted.size() - 1)(rng)];
        Failure af;
        bool oursOk = ours->Accept(t, &af);
        bool refOk = true;
        try {
          llama_grammar_accept_impl(*ref, t);
        } catch (const std::exception&) {
          refOk = false;
        }
        if (oursOk != refOk) {
          acceptMismatch++;
          if (cmp.mismatches.size() < 8) cmp.mismatches.push_back({{"kind", "accept"}, {"text", text}, {"afterTrigger", k}, {"ours", oursOk}, {"reference", refOk}});
        }
        if (!oursOk || !refOk) break;
      }
    }
    if (refAt != oursAt) {
      triggerMismatch++;
      if (cmp.mismatches.size() < 8) cmp.mismatches.push_back({{"kind", "trigger"}, {"text", text}, {"reference", refAt}, {"ours", oursAt}});
    }
    if (refAt >= 0) triggered++;
    outcomes.push_back(refAt);
    llama_grammar_free_impl(ref);
    kept = std::move(ours);
  }
  json out = cmp.Result();
  out["triggerMismatches"] = triggerMismatch;
  out["acceptMismatches"] = acceptMismatch;
  out["triggered"] = triggered;
  out["triggerAt"] = outcomes;
  return out;
}

json CmdRegexDiff(const json& req) {
  std::mt19937 rng(req.value("seed", 1u));
  uint64_t cases = 0, mismatches = 0, fired = 0, unsupported = 0, rejectedBoth = 0;
  json details = json::array();
  json unsupportedList = json::array();
  for (const auto& pj : req.at("patterns")) {
    std::string pattern = pj.get<std::string>();
    llama_grammar_trigger_pattern ref;
    bool refOk = true;
    try {
      ref.pattern = pattern;
      ref.regex = std::regex(pattern);
    } catch (const std::exception&) {
      refOk = false;
    }
    std::string why;
    auto probe = TriggerMatcher::Create({pattern}, &why);
    if (!probe) {
      if (refOk) {
        unsupported++;
        if (unsupportedList.size() < 20) unsupportedList.push_back({{"pattern", pattern}, {"why", why}});
      } else {
        rejectedBoth++;
      }
      continue;
    }
    if (!refOk) {
      mismatches++;
      if (details.size() < 10) details.push_back({{"pattern", pattern}, {"problem", "std::regex rejects it, we accept it"}});
      continue;
    }
    for (const auto& tj : req.at("texts")) {
      std::string text = tj.get<std::string>();
      auto ours = TriggerMatcher::Create({pattern}, &why);
      size_t at = 0;
      while (at <= text.size()) {
        size_t len = std::min<size_t>(text.size() - at, std::uniform_int_distribution<size_t>(0, 4)(rng));
        std::string piece = text.substr(at, len);
        at += len;
        cases++;
        size_t start = 0;
        bool oursFired = ours->Feed(piece, &start);
        size_t refStart = ref.find(ours->buffer());
        bool refFired = refStart != std::string::npos;
        if (oursFired != refFired || (oursFired && start != refStart)) {
          mismatches++;
          if (details.size() < 10) {
            details.push_back({{"pattern", pattern}, {"buffer", ours->buffer()}, {"ours", oursFired ? static_cast<int64_t>(start) : -1},
                               {"reference", refFired ? static_cast<int64_t>(refStart) : -1}});
          }
          break;
        }
        if (oursFired) {
          fired++;
          break;
        }
        if (len == 0 && at >= text.size()) break;
      }
    }
  }
  return {{"cases", cases}, {"mismatches", mismatches}, {"fired", fired}, {"unsupported", unsupported}, {"rejectedByBoth", rejectedBoth},
          {"details", details}, {"unsupportedPatterns", unsupportedList}};
}

json CmdMaskBench(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  GrammarSpec spec = SpecOf(req);
  spec.lazy = false;
  const int repeat = req.value("repeat", 20);
  auto index = v.holder.Get(v.vocab);
  json positions = json::array();
  for (const auto& pj : req.at("prefixes")) {
    std::string prefix = pj.at("text").get<std::string>();
    Failure f;
    auto g = GrammarState::Create(v.vocab, &v.holder, spec, &f);
    if (!g) return {{"invalid", f.message}};
    bool ok = true;
    for (llama_token t : Tokenize(v.vocab, prefix)) {
      if (!g->Accept(t, &f)) {
        ok = false;
        break;
      }
    }
    json row = {{"name", pj.value("name", std::string())}, {"text", prefix}};
    if (!ok) {
      row["error"] = f.message;
      positions.push_back(row);
      continue;
    }
    TokenBits bits;
    auto t0 = Clock::now();
    g->Mask(&bits, false, &f);
    row["firstMs"] = MsSince(t0);
    row["classesMs"] = g->stats().classesMs;
    std::vector<double> times;
    for (int r = 0; r < repeat; r++) {
      t0 = Clock::now();
      g->Mask(&bits, false, &f);
      times.push_back(MsSince(t0));
    }
    std::sort(times.begin(), times.end());
    row["maskMs"] = times[times.size() / 2];
    row["admitted"] = bits.Count();
    t0 = Clock::now();
    TokenBits refBits;
    g->Mask(&refBits, true, &f);
    row["referenceMs"] = MsSince(t0);
    row["same"] = refBits.words() == bits.words();
    positions.push_back(row);
  }
  json out = {{"positions", positions}, {"vocabBuildMs", index->buildMs}};
  if (req.contains("warmStates") || req.value("warmAll", false)) {
    Failure f;
    auto g = GrammarState::Create(v.vocab, &v.holder, spec, &f);
    auto t0 = Clock::now();
    bool ok = g && g->Warm(req.value("warmAll", false) ? 0 : req.at("warmStates").get<size_t>(), &f);
    out["warmMs"] = MsSince(t0);
    out["warmOk"] = ok;
    if (g && g->maskStats()) {
      const MaskStats& s = *g->maskStats();
      out["warmEntries"] = s.entries;
      out["warmEntryNodes"] = s.entryNodes;
      out["warmEntryMs"] = s.entryMs;
    }
  }
  return out;
}

// Trigger detection cost per token while a lazy grammar waits: random tokens fed to our
// GrammarState and to llama.cpp's lazy grammar (std::regex over the whole buffer per token);
// mean microseconds per token over windows of the output.
json CmdTriggerBench(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  GrammarSpec spec = SpecOf(req);
  const int n = req.value("n", 8192);
  const int refN = req.value("referenceTokens", 2048);
  const int window = req.value("window", 512);
  std::mt19937 rng(req.value("seed", 1u));
  const int32_t nVocab = llama_vocab_n_tokens(v.vocab);
  std::vector<llama_token> tokens;
  std::uniform_int_distribution<int32_t> any(0, nVocab - 1);
  while (static_cast<int>(tokens.size()) < n) {
    llama_token t = any(rng);
    if (llama_vocab_is_eog(v.vocab, t) || (llama_vocab_get_attr(v.vocab, t) & LLAMA_TOKEN_ATTR_CONTROL)) continue;
    if (std::find(spec.triggerTokens.begin(), spec.triggerTokens.end(), t) != spec.triggerTokens.end()) continue;
    tokens.push_back(t);
  }
  auto windows = [&](const std::vector<double>& us) {
    json out = json::array();
    for (size_t w = 0; w + window <= us.size(); w += window) {
      double sum = 0;
      for (size_t i = w; i < w + window; i++) sum += us[i];
      out.push_back({{"from", w}, {"us", sum / window}});
    }
    return out;
  };
  json result;
  Failure f;
  auto ours = GrammarState::Create(v.vocab, &v.holder, spec, &f);
  if (!ours) return {{"invalid", f.message}};
  std::vector<double> us;
  int firedAt = -1;
  for (int i = 0; i < n; i++) {
    auto t0 = Clock::now();
    ours->Accept(tokens[i], &f);
    us.push_back(MsSince(t0) * 1000);
    if (firedAt < 0 && !ours->awaitingTrigger()) firedAt = i;
  }
  result["ours"] = windows(us);
  result["oursFiredAt"] = firedAt;
  us.clear();
  llama_grammar* ref = ReferenceGrammar(v.vocab, spec);
  if (ref != nullptr && refN > 0) {
    firedAt = -1;
    for (int i = 0; i < refN && i < n; i++) {
      auto t0 = Clock::now();
      try {
        llama_grammar_accept_impl(*ref, tokens[i]);
      } catch (const std::exception&) {
      }
      us.push_back(MsSince(t0) * 1000);
      if (firedAt < 0 && !ref->awaiting_trigger) firedAt = i;
    }
    result["reference"] = windows(us);
    result["referenceFiredAt"] = firedAt;
    llama_grammar_free_impl(ref);
  }
  return result;
}

// MaskBench's protocol for one schema: each instance tokenized without special tokens and fed token
// by token (the mask must admit each token, as in generation), then the end-of-generation token must
// be admitted. With timeMask every step computes the full mask and its time is returned.
json CmdSchemaCheck(const json& req) {
  LoadedVocab& v = Load(req.at("path").get<std::string>());
  GrammarSpec spec = SpecOf(req);
  spec.lazy = false;
  const bool timeMask = req.value("timeMask", false);
  // fresh: a new state per instance (every instance pays the cold first masks); otherwise one state
  // reset between instances, as the addon's grammar pool reuses a finished generation's state
  const bool fresh = req.value("fresh", false);
  // slowMaskUs > 0: what each mask at least that slow did (the mask engine's counters before and after)
  const double slowMaskUs = req.value("slowMaskUs", 0.0);
  // sharedEntries false: no mask entries shared with earlier grammars (every schema measured cold)
  v.holder.SetSharing(req.value("sharedEntries", true));
  const llama_token eos = llama_vocab_eos(v.vocab);
  json results = json::array();
  json maskUs = json::array();
  json slow = json::array();
  double createMs = 0;
  // the first state is a cold Create (the grammar's parse): what a new schema costs before its first mask
  double firstCreateMs = 0;
  std::unique_ptr<GrammarState> kept;
  if (req.at("instances").empty()) {
    Failure f;
    auto t0 = Clock::now();
    std::unique_ptr<GrammarState> g = GrammarState::Create(v.vocab, &v.holder, spec, &f);
    firstCreateMs = MsSince(t0);
    if (!g) return {{"invalid", f.message}};
  }
  for (const auto& tj : req.at("instances")) {
    std::string text = tj.get<std::string>();
    std::vector<llama_token> tokens;
    {
      std::vector<llama_token> out(text.size() + 8);
      int n = llama_tokenize(v.vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), false, false);
      if (n < 0) throw std::runtime_error("tokenize failed");
      out.resize(static_cast<size_t>(n));
      tokens = std::move(out);
    }
    Failure f;
    auto t0 = Clock::now();
    std::unique_ptr<GrammarState> g;
    if (!fresh && kept && kept->Reset(spec, &f)) g = std::move(kept);
    if (!g) g = GrammarState::Create(v.vocab, &v.holder, spec, &f);
    createMs += MsSince(t0);
    if (results.empty()) firstCreateMs = MsSince(t0);
    if (!g) return {{"invalid", f.message}};
    bool ok = true;
    int64_t at = -1;
    TokenBits bits;
    for (size_t i = 0; i <= tokens.size() && ok; i++) {
      const llama_token t = i < tokens.size() ? tokens[i] : eos;
      bool admitted;
      if (timeMask) {
        const MaskStats before = g->maskStats() ? *g->maskStats() : MaskStats{};
        t0 = Clock::now();
        if (!g->Mask(&bits, false, &f)) throw std::runtime_error("mask failed: " + f.message);
        const double us = MsSince(t0) * 1000;
        maskUs.push_back(us);
        if (slowMaskUs > 0 && us >= slowMaskUs && g->maskStats()) {
          const MaskStats& a = *g->maskStats();
          slow.push_back({{"us", us}, {"entries", a.entries - before.entries}, {"entryNodes", a.entryNodes - before.entryNodes},
                          {"runtimeNodes", a.runtimeNodes - before.runtimeNodes}, {"continuations", a.continuations - before.continuations},
                          {"memoHits", a.memoHits - before.memoHits}, {"stubs", a.stubs - before.stubs},
                          {"shallowEntries", a.shallowEntries - before.shallowEntries}, {"shallowNodes", a.shallowNodes - before.shallowNodes},
                          {"entryMs", a.entryMs - before.entryMs}, {"sharedHits", a.sharedHits - before.sharedHits},
                          {"localHits", a.localHits - before.localHits}, {"classesMs", g->stats().classesMs},
                          {"token", i}});
        }
        admitted = bits.Test(t);
      } else {
        admitted = g->Admits(t, &f);
      }
      if (!admitted || (i < tokens.size() && !g->Accept(t, &f))) {
        ok = false;
        at = static_cast<int64_t>(i);
      }
    }
    results.push_back({{"accepted", ok}, {"at", at}, {"tokens", tokens.size()}});
    kept = std::move(g);
  }
  json out = {{"results", results}, {"maskUs", maskUs}, {"createMs", createMs}, {"firstCreateMs", firstCreateMs}};
  if (slowMaskUs > 0) out["slowMasks"] = slow;
  return out;
}

}  // namespace

int main() {
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
  }, nullptr);
  llama_backend_init();
  std::string line;
  while (std::getline(std::cin, line)) {
    json answer;
    json id = nullptr;
    try {
      json req = json::parse(line);
      id = req.value("id", json(nullptr));
      std::string cmd = req.at("cmd").get<std::string>();
      json result;
      if (cmd == "vocab") {
        result = CmdVocab(req);
      } else if (cmd == "mask.diff") {
        result = CmdMaskDiff(req);
      } else if (cmd == "trigger.diff") {
        result = CmdTriggerDiff(req);
      } else if (cmd == "regex.diff") {
        result = CmdRegexDiff(req);
      } else if (cmd == "trigger.bench") {
        result = CmdTriggerBench(req);
      } else if (cmd == "mask.bench") {
        result = CmdMaskBench(req);
      } else if (cmd == "sampler.diff") {
        result = CmdSamplerDiff(req);
      } else if (cmd == "sampler.bench") {
        result = CmdSamplerBench(req);
      } else if (cmd == "schema.check") {
        result = CmdSchemaCheck(req);
      } else if (cmd == "forced.diff") {
        result = CmdForcedDiff(req);
      } else if (cmd == "grammar.accepts") {
        result = CmdGrammarAccepts(req);
      } else if (cmd == "ping") {
        result = {{"pong", true}};
      } else {
        throw std::runtime_error("unknown command " + cmd);
      }
      answer = {{"id", id}, {"ok", true}, {"result", result}};
    } catch (const std::exception& e) {
      answer = {{"id", id}, {"ok", false}, {"error", e.what()}};
    }
    std::cout << answer.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
  }
  return 0;
}
