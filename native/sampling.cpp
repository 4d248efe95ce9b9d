#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace lp {
namespace {

NativeError ToNative(const grammar::Failure& f) { return {f.code, f.message}; }

}  // namespace

std::unique_ptr<Sampler> Sampler::Create(const llama_vocab* vocab, const SamplingParams& p, const GrammarParams* grammar,
                                         NativeError* error, grammar::VocabIndexHolder* vocabIndex) {
  std::unique_ptr<Sampler> s(new Sampler());
  s->nVocab_ = llama_vocab_n_tokens(vocab);
  s->candidates_.resize(static_cast<size_t>(s->nVocab_));
  if (grammar != nullptr) {
    grammar::Failure f;
    s->grammar_ = grammar::GrammarState::Create(vocab, vocabIndex, *grammar, &f);
    if (!s->grammar_) {
      *error = ToNative(f);
      return nullptr;
    }
  }
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
  return s;
}

Sampler::~Sampler() {
  if (chain_ != nullptr) llama_sampler_free(chain_);
  if (pre_ != nullptr) llama_sampler_free(pre_);
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
  const bool constrained = grammar_ && !grammar_->awaitingTrigger();
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
  // Rejected: constrain every candidate, then run the chain again (llama.cpp's resample).
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
  return true;
}

}  // namespace lp
