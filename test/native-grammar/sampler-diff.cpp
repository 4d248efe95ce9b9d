// sampler.diff: the Sampler's fast path (native/sampling-select) against its full n_vocab path, over
// random logits rows, sampling parameters, logit biases and penalty histories, step by step
// (both accept the full path's token, so penalties, grammar and RNG state move together).
//
// A step's values are the row after logit bias and penalties, computed here by llama.cpp's own
// samplers on a full array. Where the top k+1 finite values are distinct, the two tokens must be
// the same (-inf values have probability 0 and are never chosen). Where they tie, the full path's std::partial_sort orders equals in an unspecified way:
// the tokens may differ, but then they must have the same value (same candidates, same
// probabilities); those steps are counted (tiedSteps, tieDifferences), not failed.
#include <llama.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sampling.h"

using json = nlohmann::ordered_json;

namespace {

using Clock = std::chrono::steady_clock;

const llama_vocab* VocabAt(const std::string& path) {
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

struct Case {
  lp::SamplingParams params;
  std::vector<llama_token> hot;  // ids the rows favour and the biases and histories name
  int rowKind = 0;
};

float Uniform(std::mt19937& rng, float a, float b) { return std::uniform_real_distribution<float>(a, b)(rng); }
int Pick(std::mt19937& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

Case RandomCase(std::mt19937& rng, int32_t nVocab) {
  Case c;
  lp::SamplingParams& p = c.params;
  p.seed = static_cast<uint32_t>(rng() % 0xFFFFFFF0u);
  p.temperature = Pick(rng, 5) == 0 ? (Pick(rng, 2) ? 0.0f : -1.0f) : Uniform(rng, 0.05f, 2.0f);
  const int32_t slowK[] = {0, -1, 129, 200, 1000, nVocab + 5};
  p.topK = Pick(rng, 6) == 0 ? slowK[Pick(rng, 6)] : 1 + Pick(rng, 128);
  const float topP[] = {1.0f, 0.95f, 0.5f, 0.0f};
  p.topP = Pick(rng, 2) ? topP[Pick(rng, 4)] : Uniform(rng, 0.05f, 1.0f);
  const float minP[] = {0.0f, 0.05f, 0.3f, 1.0f};
  p.minP = Pick(rng, 2) ? minP[Pick(rng, 4)] : Uniform(rng, 0.0f, 0.5f);
  for (int i = 0, n = 1 + Pick(rng, 60); i < n; i++) c.hot.push_back(Pick(rng, nVocab));
  if (Pick(rng, 3) != 0) {
    for (int i = 0, n = Pick(rng, 24); i < n; i++) {
      llama_logit_bias b;
      const int where = Pick(rng, 10);
      b.token = where == 0 ? (Pick(rng, 2) ? -3 : nVocab + Pick(rng, 10)) : where < 7 ? c.hot[static_cast<size_t>(Pick(rng, static_cast<int>(c.hot.size())))] : Pick(rng, nVocab);
      const int kind = Pick(rng, 6);
      b.bias = kind == 0 ? -INFINITY : kind == 1 ? 100.0f : kind == 2 ? 0.0f : Uniform(rng, -10.0f, 10.0f);
      p.logitBias.push_back(b);
      if (Pick(rng, 5) == 0) p.logitBias.push_back({b.token, Uniform(rng, -3.0f, 3.0f)});  // a duplicate id
    }
  }
  if (Pick(rng, 2) != 0) {
    p.repeatPenalty = Pick(rng, 3) ? Uniform(rng, 0.5f, 2.0f) : 1.0f;
    p.frequencyPenalty = Pick(rng, 2) ? Uniform(rng, -1.0f, 2.0f) : 0.0f;
    p.presencePenalty = Pick(rng, 2) ? Uniform(rng, -1.0f, 2.0f) : 0.0f;
    const int32_t lastN[] = {0, 1, 8, 64, -1, 300};
    p.penaltyLastN = lastN[Pick(rng, 6)];
  }
  c.rowKind = Pick(rng, 7);
  return c;
}

// Logits rows: wide, narrow, quantized (exact ties), near-equal, extreme, with -inf entries, and
// several ids sharing the maximum (greedy's first-maximum rule, ties inside the top k).
void RandomRow(std::mt19937& rng, const Case& c, std::vector<float>* row) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t n = row->size();
  float* v = row->data();
  switch (c.rowKind) {
    case 0: for (size_t i = 0; i < n; i++) v[i] = 3.0f * normal(rng); break;
    case 1: for (size_t i = 0; i < n; i++) v[i] = 0.2f * normal(rng); break;
    case 2: for (size_t i = 0; i < n; i++) v[i] = std::round(4.0f * normal(rng)) / 2.0f; break;
    case 3: for (size_t i = 0; i < n; i++) v[i] = 5.0f + 1e-5f * normal(rng); break;
    case 4:
      for (size_t i = 0; i < n; i++) {
        const int k = Pick(rng, 100);
        v[i] = k == 0 ? -1e30f : k == 1 ? 1e4f * normal(rng) : 20.0f * normal(rng);
      }
      break;
    default:
      for (size_t i = 0; i < n; i++) v[i] = Pick(rng, 4) == 0 ? -INFINITY : 2.0f * normal(rng);
      break;
  }
  for (llama_token t : c.hot) {
    if (Pick(rng, 2)) v[t] += Uniform(rng, 0.0f, 12.0f);
  }
  if (c.rowKind == 2) for (llama_token t : c.hot) v[t] = std::round(v[t]);
  v[Pick(rng, static_cast<int>(n))] = 8.0f;  // at least one finite value
  if (c.rowKind == 6) {
    const float top = *std::max_element(v, v + n);
    for (int i = 0, m = 2 + Pick(rng, 40); i < m; i++) v[Pick(rng, static_cast<int>(n))] = top;
  }
}

}  // namespace

json CmdSamplerDiff(const json& req) {
  const uint32_t seed = req.at("seed").get<uint32_t>();
  const int cases = req.at("cases").get<int>();
  const int steps = req.at("steps").get<int>();
  const std::string path = req.value("path", std::string());
  const llama_vocab* vocab = path.empty() ? nullptr : VocabAt(path);
  const int32_t nVocab = vocab != nullptr ? llama_vocab_n_tokens(vocab) : req.at("nVocab").get<int32_t>();
  std::vector<lp::GrammarParams> grammars;
  for (const auto& g : req.value("grammars", json::array())) {
    lp::GrammarParams gp;
    gp.gbnf = g.at("gbnf").get<std::string>();
    gp.lazy = g.value("lazy", false);
    for (const auto& t : g.value("patterns", json::array())) gp.triggerPatterns.push_back(t.get<std::string>());
    grammars.push_back(gp);
  }
  if (!grammars.empty() && vocab == nullptr) throw std::runtime_error("sampler.diff: grammars need a vocabulary path");

  std::mt19937 rng(seed);
  int total = 0, strict = 0, tied = 0, tieDifferences = 0, fastCases = 0, grammarCases = 0, deadEnds = 0;
  double fastMs = 0, fullMs = 0;
  json mismatches = json::array();
  std::vector<float> row(static_cast<size_t>(nVocab));
  std::vector<llama_token_data> all(static_cast<size_t>(nVocab));
  std::vector<float> values;
  for (int ci = 0; ci < cases; ci++) {
    Case c = RandomCase(rng, nVocab);
    const lp::GrammarParams* grammar = grammars.empty() || Pick(rng, 4) == 0 ? nullptr : &grammars[static_cast<size_t>(Pick(rng, static_cast<int>(grammars.size())))];
    lp::NativeError error;
    lp::SamplingParams fullParams = c.params;
    fullParams.fastSelect = false;
    std::unique_ptr<lp::Sampler> fast, full;
    if (vocab != nullptr) {
      fast = lp::Sampler::Create(vocab, c.params, grammar, &error);
      full = lp::Sampler::Create(vocab, fullParams, grammar, &error);
      if (!fast || !full) throw std::runtime_error("sampler.diff: " + error.message);
    } else {
      fast = lp::Sampler::Create(nVocab, c.params);
      full = lp::Sampler::Create(nVocab, fullParams);
    }
    if (full->selectsFast()) throw std::runtime_error("sampler.diff: fastSelect=false still selects fast");
    fastCases += fast->selectsFast() ? 1 : 0;
    grammarCases += grammar != nullptr ? 1 : 0;
    // The values the chain sees: llama.cpp's logit bias and penalties on the full array.
    llama_sampler_chain_params cp = llama_sampler_chain_default_params();
    llama_sampler* pre = llama_sampler_chain_init(cp);
    if (!c.params.logitBias.empty()) {
      llama_sampler_chain_add(pre, llama_sampler_init_logit_bias(nVocab, static_cast<int32_t>(c.params.logitBias.size()), c.params.logitBias.data()));
    }
    llama_sampler_chain_add(pre, llama_sampler_init_penalties(nVocab, c.params.penaltyLastN, c.params.repeatPenalty,
                                                              c.params.frequencyPenalty, c.params.presencePenalty));
    bool alive = true;
    auto accept = [&](llama_token t) {
      lp::NativeError e1, e2;
      const bool a = fast->Accept(t, &e1), b = full->Accept(t, &e2);
      if (a != b) throw std::runtime_error("sampler.diff: Accept disagrees on token " + std::to_string(t));
      llama_sampler_accept(pre, t);
      return a;
    };
    if (grammar == nullptr) {  // a random history for the penalties
      for (int i = 0, n = Pick(rng, 100); i < n; i++) accept(Pick(rng, 3) ? c.hot[static_cast<size_t>(Pick(rng, static_cast<int>(c.hot.size())))] : Pick(rng, nVocab));
    }
    const int32_t k = c.params.temperature <= 0.0f ? 1 : c.params.topK;
    for (int s = 0; s < steps && alive; s++) {
      RandomRow(rng, c, &row);
      lp::NativeError ef, eu;
      auto t0 = Clock::now();
      llama_token a = fast->Sample(row.data(), &ef);
      auto t1 = Clock::now();
      llama_token b = full->Sample(row.data(), &eu);
      auto t2 = Clock::now();
      fastMs += std::chrono::duration<double, std::milli>(t1 - t0).count();
      fullMs += std::chrono::duration<double, std::milli>(t2 - t1).count();
      total++;
      if (b == LLAMA_TOKEN_NULL) {  // the grammar left nothing: both must say so
        deadEnds++;
        if (a != LLAMA_TOKEN_NULL || ef.code != eu.code) mismatches.push_back({{"case", ci}, {"step", s}, {"fast", a}, {"full", b}, {"error", eu.code}});
        break;
      }
      for (int32_t i = 0; i < nVocab; i++) all[static_cast<size_t>(i)] = {i, row[static_cast<size_t>(i)], 0.0f};
      llama_token_data_array arr{all.data(), all.size(), -1, false};
      llama_sampler_apply(pre, &arr);
      // ties among the top k+1 finite values (greedy takes the first maximum on both paths: strict)
      bool tie = false;
      if (c.params.temperature > 0.0f && k >= 1 && k <= 128) {
        values.clear();
        for (const auto& d : all) if (std::isfinite(d.logit)) values.push_back(d.logit);
        const size_t m = std::min(values.size(), static_cast<size_t>(k) + 1);
        std::partial_sort(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(m), values.end(), std::greater<float>());
        for (size_t i = 1; i < m; i++) tie = tie || values[i] == values[i - 1];
        // every candidate banned: all tie at -inf (llama.cpp's chain then divides by zero either way)
        tie = tie || values.empty();
      }
      const bool grammarStep = grammar != nullptr && !fast->grammarState()->awaitingTrigger();
      tied += tie ? 1 : 0;
      strict += tie ? 0 : 1;
      if (a != b) {
        const bool sameValue = a != LLAMA_TOKEN_NULL && all[static_cast<size_t>(a)].logit == all[static_cast<size_t>(b)].logit;
        // a constrained step after a tie: the candidates the grammar was asked about may differ
        if (tie && sameValue) {
          tieDifferences++;
        } else if (!(tie && grammarStep)) {
          if (mismatches.size() < 20) {
            mismatches.push_back({{"case", ci}, {"step", s}, {"fast", a}, {"full", b}, {"fastValue", a == LLAMA_TOKEN_NULL ? 0.0f : all[static_cast<size_t>(a)].logit},
                                  {"fullValue", all[static_cast<size_t>(b)].logit}, {"tie", tie}, {"error", ef.message},
                                  {"temperature", c.params.temperature}, {"topK", c.params.topK}, {"topP", c.params.topP},
                                  {"minP", c.params.minP}, {"biases", c.params.logitBias.size()}, {"repeat", c.params.repeatPenalty},
                                  {"lastN", c.params.penaltyLastN}, {"rowKind", c.rowKind}});
          } else {
            mismatches.push_back({{"case", ci}});
          }
        } else {
          tieDifferences++;
        }
      }
      alive = accept(b);
    }
    llama_sampler_free(pre);
  }
  return {{"nVocab", nVocab}, {"cases", cases}, {"fastCases", fastCases}, {"grammarCases", grammarCases}, {"steps", total},
          {"strictSteps", strict}, {"tiedSteps", tied}, {"tieDifferences", tieDifferences}, {"deadEnds", deadEnds},
          {"mismatchCount", mismatches.size()}, {"mismatches", mismatches}, {"fastMs", fastMs}, {"fullMs", fullMs}};
}

// sampler.bench: time per token of the fast and the full path at one setting, over a few fixed
// rows (normal logits, sigma 3) cycled; both accept their own tokens.
json CmdSamplerBench(const json& req) {
  const int32_t nVocab = req.at("nVocab").get<int32_t>();
  const int steps = req.value("steps", 2000);
  lp::SamplingParams p;
  p.temperature = req.value("temperature", 0.8f);
  p.topK = req.value("topK", 40);
  p.topP = req.value("topP", 0.95f);
  p.minP = req.value("minP", 0.05f);
  p.repeatPenalty = req.value("repeatPenalty", 1.0f);
  p.seed = 7;
  std::mt19937 rng(req.value("seed", 1u));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> rows(static_cast<size_t>(req.value("rows", 8)), std::vector<float>(static_cast<size_t>(nVocab)));
  for (auto& r : rows) for (auto& v : r) v = normal(rng);
  json out;
  for (bool fastSelect : {true, false}) {
    if (!req.value(fastSelect ? "fast" : "full", true)) continue;
    p.fastSelect = fastSelect;
    auto s = lp::Sampler::Create(nVocab, p);
    lp::NativeError e;
    auto t0 = Clock::now();
    for (int i = 0; i < steps; i++) {
      llama_token t = s->Sample(rows[static_cast<size_t>(i) % rows.size()].data(), &e);
      s->Accept(t, &e);
    }
    out[fastSelect ? "fastUs" : "fullUs"] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / steps;
  }
  return out;
}
