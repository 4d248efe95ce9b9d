#include "sampling.h"

#include "sampling-select.h"
#include "grammar/grammar-pool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace lp {
namespace {

NativeError ToNative(const grammar::Failure& f) { return {f.code, f.message}; }

// LLAMAPEG_SAMPLER_FULL=1: the end-to-end test's reference run (sampling.h, fastSelect).
bool FullPathForced() {
  const char* v = std::getenv("LLAMAPEG_SAMPLER_FULL");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

}  // namespace

std::unique_ptr<Sampler> Sampler::Create(const llama_vocab* vocab, const SamplingParams& p, const GrammarParams* grammar,
                                         NativeError* error, grammar::VocabIndexHolder* vocabIndex) {
  std::unique_ptr<Sampler> s = Create(llama_vocab_n_tokens(vocab), p);
  if (grammar != nullptr) {
    grammar::Failure f;
    if (vocabIndex != nullptr) {
      // the model's pool: the same grammar as a finished generation's starts warm
      s->pool_ = vocabIndex->Pool();
      s->poolKey_ = grammar::GrammarState::PoolKey(*grammar);
      s->grammar_ = s->pool_->Acquire(vocab, vocabIndex, *grammar, &f);
    } else {
      s->grammar_ = grammar::GrammarState::Create(vocab, vocabIndex, *grammar, &f);
    }
    if (!s->grammar_) {
      *error = ToNative(f);
      return nullptr;
    }
  }
  return s;
}

std::unique_ptr<Sampler> Sampler::Create(int32_t nVocab, const SamplingParams& p) {
  std::unique_ptr<Sampler> s(new Sampler());
  s->nVocab_ = nVocab;
  llama_sampler_chain_params cp = llama_sampler_chain_default_params();
  cp.no_perf = true;
  s->chain_ = llama_sampler_chain_init(cp);
  s->reference_ = !p.fastGrammarResample;
  s->grammarFirst_ = p.grammarFirst;
  s->logprobs_ = p.logprobs;
  s->topLogprobs_ = std::max(0, p.topLogprobs);
  // llama.cpp's order (common_sampler): logit bias, penalties, then the selection; the same as the
  // benchmark's C++ loop (scripts/bench) when bias and penalties are off.
  const bool penalties = p.repeatPenalty != 1.0f || p.frequencyPenalty != 0.0f || p.presencePenalty != 0.0f;
  if (!p.logitBias.empty() || penalties) {
    s->pre_ = llama_sampler_chain_init(cp);
    if (!p.logitBias.empty()) {
      llama_sampler_chain_add(s->pre_, llama_sampler_init_logit_bias(s->nVocab_, static_cast<int32_t>(p.logitBias.size()), p.logitBias.data()));
    }
    if (penalties) {
      llama_sampler_chain_add(s->pre_, llama_sampler_init_penalties(s->nVocab_, p.penaltyLastN, p.repeatPenalty, p.frequencyPenalty,
                                                                    p.presencePenalty));
      s->penalties_ = llama_sampler_chain_get(s->pre_, llama_sampler_chain_n(s->pre_) - 1);
    }
  }
  if (p.temperature <= 0.0f) {
    llama_sampler_chain_add(s->chain_, llama_sampler_init_greedy());
  } else {
    llama_sampler_chain_add(s->chain_, llama_sampler_init_top_k(p.topK));
    llama_sampler_chain_add(s->chain_, llama_sampler_init_top_p(p.topP, 1));
    llama_sampler_chain_add(s->chain_, llama_sampler_init_min_p(p.minP, 1));
    llama_sampler_chain_add(s->chain_, llama_sampler_init_temp(p.temperature));
    llama_sampler_chain_add(s->chain_, llama_sampler_init_dist(p.seed));
  }
  // The fast path where the chain's choice lies among the top k: top_k partially sorts at most 128
  // entries (above that llama.cpp takes a bucket sort; kept on the full path), and greedy.
  if (p.fastSelect && !p.logprobs && !FullPathForced()) {
    if (p.temperature <= 0.0f) {
      s->fastK_ = -1;
    } else if (p.topK >= 1 && p.topK <= 128) {
      s->fastK_ = p.topK;
    }
  }
  if (s->fastK_ != 0 && s->pre_ != nullptr) {
    // Out-of-range ids: logit_bias finds no candidate for them on the full array either.
    for (const auto& b : p.logitBias) {
      if (b.token >= 0 && b.token < nVocab) s->bias_.push_back(b);
    }
    if (penalties) s->penaltyLastN_ = std::max(p.penaltyLastN, 0);  // llama.cpp clamps it the same way
    s->changedAt_.assign(static_cast<size_t>(nVocab), -1);
    s->changedBits_.assign((static_cast<size_t>(nVocab) + 63) / 64, 0);
  }
  return s;
}

Sampler::~Sampler() {
  if (chain_ != nullptr) llama_sampler_free(chain_);
  if (pre_ != nullptr) llama_sampler_free(pre_);
  if (pool_ && grammar_) pool_->Release(std::move(grammar_), std::move(poolKey_));
}

void Sampler::Prepare(const float* logits, llama_token_data_array* all) {
  Fill(logits);
  *all = llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
  if (pre_ != nullptr) llama_sampler_apply(pre_, all);
}

// log softmax over the prepared candidates: the denominator, the top few, and every logit for the
// chosen token's (which the chain may pick after a grammar rejection).
void Sampler::NoteLogprobs(llama_token chosen) {
  extraIds_.clear();
  extraValues_.clear();
  if (!logprobs_ || chosen < 0 || chosen >= nVocab_) return;
  extraIds_.push_back(chosen);
  extraValues_.push_back(adjusted_[chosen] - logSum_);
  for (const auto& t : top_) {
    extraIds_.push_back(t.id);
    extraValues_.push_back(t.logit - logSum_);
  }
}

void Sampler::Fill(const float* logits) {
  // allocated on first use: a sampler that stays on the fast path never needs the 1.8 MB
  if (candidates_.size() != static_cast<size_t>(nVocab_)) candidates_.resize(static_cast<size_t>(nVocab_));
  llama_token_data* d = candidates_.data();
  for (int32_t i = 0; i < nVocab_; i++) d[i] = llama_token_data{i, logits[i], 0.0f};
}

llama_token Sampler::Sample(llama_context* ctx, int32_t index, NativeError* error) {
  const float* logits = llama_get_logits_ith(ctx, index);
  if (logits == nullptr) {
    *error = {"ERR_DECODE", "llama.cpp returned no logits for batch position " + std::to_string(index)};
    return LLAMA_TOKEN_NULL;
  }
  return Sample(logits, error);
}

bool Sampler::Constrain(llama_token_data_array* array, NativeError* error) {
  grammar::Failure f;
  if (!grammar_->Apply(array, reference_, &f)) {
    *error = ToNative(f);
    return false;
  }
  for (size_t i = 0; i < array->size; i++) {
    if (array->data[i].logit != -INFINITY) return true;
  }
  *error = {"ERR_GRAMMAR_DEAD_END", "the grammar admits no token here (every candidate was rejected)"};
  return false;
}

llama_token Sampler::Sample(const float* logits, NativeError* error) {
  llama_token id = SampleInner(logits, error);
  if (logprobs_) NoteLogprobs(id);
  return id;
}

llama_token Sampler::SampleInner(const float* logits, NativeError* error) {
  const bool constrained = grammar_ && !grammar_->awaitingTrigger();
  // Grammar-first constrains every candidate before the chain: only the full path can.
  if (fastK_ == 0 || (constrained && grammarFirst_)) return SampleFull(logits, constrained, error);
  llama_token id = SampleFast(logits, error);
  if (id == LLAMA_TOKEN_NULL || !constrained) return id;
  return AdmitOrResample(logits, id, error);
}

// The ids logit bias and penalties change at this step, with their changed values computed as
// pre_ computes them on the full array: the biases added in list order (as logit_bias adds them
// where every id is at its own index; its own apply on a small array would not do: its search
// fallback adds only the first of several entries for one id), then the penalties sampler itself,
// which looks ids up in its window's counts, so the array's order and size do not matter to it.
void Sampler::NoteChanged(const float* logits) {
  changed_.clear();
  if (changedAt_.empty()) return;
  auto note = [&](llama_token id) {
    if (changedAt_[static_cast<size_t>(id)] >= 0) return;
    changedAt_[static_cast<size_t>(id)] = static_cast<int32_t>(changed_.size());
    changedBits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    changed_.push_back(llama_token_data{id, logits[id], 0.0f});
  };
  for (const auto& b : bias_) note(b.token);
  for (llama_token t : window_) note(t);
  for (const auto& b : bias_) changed_[static_cast<size_t>(changedAt_[static_cast<size_t>(b.token)])].logit += b.bias;
  if (penalties_ != nullptr && !changed_.empty()) {
    llama_token_data_array some{changed_.data(), changed_.size(), -1, false};
    llama_sampler_apply(penalties_, &some);
  }
}

// The chain on the top k candidates only: its top_k then sorts k entries, and top_p, min_p, temp
// and dist see what they see on the full array (dist draws once either way). For distinct values
// the choice is the full path's. Where values tie at or inside the k-th place, std::partial_sort
// (full path) and nth_element (here) order the equals each in its own unspecified way: the
// candidate values and probabilities are the same, but which of two equal tokens is chosen may
// differ (sampler.diff in test/native-grammar measures it: up to 1 in 5 tied steps on its
// tie-heavy rows). Greedy takes the first maximum on both paths: the same token, ties included.
llama_token Sampler::SampleFast(const float* logits, NativeError* error) {
  NoteChanged(logits);
  llama_token id = LLAMA_TOKEN_NULL;
  if (fastK_ < 0) {
    id = ArgmaxFirst(logits, nVocab_, changedBits_, changed_);
  } else {
    SelectTopK(logits, nVocab_, fastK_, changedBits_, changed_, &picked_);
    llama_token_data_array top{picked_.data(), picked_.size(), -1, false};
    llama_sampler_apply(chain_, &top);
    if (top.selected >= 0 && static_cast<size_t>(top.selected) < top.size) id = top.data[top.selected].id;
  }
  for (const auto& d : changed_) {
    changedAt_[static_cast<size_t>(d.id)] = -1;
    changedBits_[static_cast<size_t>(d.id) >> 6] = 0;
  }
  if (id == LLAMA_TOKEN_NULL) *error = {"ERR_INTERNAL", "the sampler chain selected no token"};
  return id;
}

llama_token Sampler::SampleFull(const float* logits, bool constrained, NativeError* error) {
  llama_token_data_array all;
  Prepare(logits, &all);
  if (logprobs_) {
    adjusted_.resize(static_cast<size_t>(nVocab_));
    float max = -INFINITY;
    for (int32_t i = 0; i < nVocab_; i++) {
      adjusted_[i] = candidates_[i].logit;
      max = std::max(max, adjusted_[i]);
    }
    double sum = 0;
    for (int32_t i = 0; i < nVocab_; i++) sum += std::exp(static_cast<double>(adjusted_[i] - max));
    logSum_ = max + static_cast<float>(std::log(sum));
    top_.clear();
    if (topLogprobs_ > 0) {
      auto lower = [](const llama_token_data& a, const llama_token_data& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
      const size_t k = std::min<size_t>(static_cast<size_t>(topLogprobs_), candidates_.size());
      top_.assign(candidates_.begin(), candidates_.end());
      std::partial_sort(top_.begin(), top_.begin() + static_cast<std::ptrdiff_t>(k), top_.end(), lower);
      top_.resize(k);
    }
  }
  if (constrained && grammarFirst_) {
    if (!Constrain(&all, error)) return LLAMA_TOKEN_NULL;
    return SelectFrom(&all, error);
  }
  llama_sampler_apply(chain_, &all);
  if (all.selected < 0 || static_cast<size_t>(all.selected) >= all.size) {
    *error = {"ERR_INTERNAL", "the sampler chain selected no token"};
    return LLAMA_TOKEN_NULL;
  }
  llama_token id = all.data[all.selected].id;
  if (!constrained) return id;
  return AdmitOrResample(logits, id, error);
}

// Rejection-first: the chain's choice if the grammar admits it; else every candidate is
// constrained and the chain runs again on the full array (llama.cpp's resample).
llama_token Sampler::AdmitOrResample(const float* logits, llama_token id, NativeError* error) {
  grammar::Failure f;
  bool admitted;
  if (reference_) {
    llama_token_data single{id, 1.0f, 0.0f};
    llama_token_data_array one{&single, 1, -1, false};
    admitted = grammar_->Apply(&one, true, &f) && single.logit != -INFINITY;
  } else {
    admitted = grammar_->Admits(id, &f);
  }
  if (!f.ok()) {
    *error = ToNative(f);
    return LLAMA_TOKEN_NULL;
  }
  if (admitted) return id;
  llama_token_data_array all;
  Prepare(logits, &all);
  if (!Constrain(&all, error)) return LLAMA_TOKEN_NULL;
  return SelectFrom(&all, error);
}

llama_token Sampler::SelectFrom(llama_token_data_array* array, NativeError* error) {
  llama_sampler_apply(chain_, array);
  if (array->selected < 0 || static_cast<size_t>(array->selected) >= array->size ||
      array->data[array->selected].logit == -INFINITY) {
    *error = {"ERR_GRAMMAR_DEAD_END", "the sampler chain left no token the grammar admits"};
    return LLAMA_TOKEN_NULL;
  }
  return array->data[array->selected].id;
}

bool Sampler::GrammarAdmits(llama_token token, NativeError* error) {
  if (!grammar_) return true;
  grammar::Failure f;
  bool ok = grammar_->Admits(token, &f);
  if (!f.ok()) {
    *error = ToNative(f);
    return false;
  }
  return ok;
}

bool Sampler::Accept(llama_token token, NativeError* error) {
  if (grammar_) {
    grammar::Failure f;
    bool ok;
    try {
      ok = grammar_->Accept(token, &f);
    } catch (const std::exception& e) {
      f = {"ERR_GRAMMAR_DEAD_END", std::string("the grammar cannot continue: ") + e.what()};
      ok = false;
    }
    if (!ok) {
      *error = ToNative(f);
      return false;
    }
  }
  if (pre_ != nullptr) llama_sampler_accept(pre_, token);
  llama_sampler_accept(chain_, token);
  // The fast path's copy of the penalties window (which ids they change); out-of-range ids have
  // no candidate to change.
  if (penaltyLastN_ > 0 && token >= 0 && token < nVocab_) {
    if (window_.size() == static_cast<size_t>(penaltyLastN_)) window_.erase(window_.begin());
    window_.push_back(token);
  }
  return true;
}

}  // namespace lp
