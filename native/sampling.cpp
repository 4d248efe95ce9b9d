#include "sampling.h"

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
  // Keep this order identical to the benchmark's C++ loop (scripts/bench).
  if (p.repeatPenalty != 1.0f) {
    llama_sampler_chain_add(s->chain_, llama_sampler_init_penalties(s->nVocab_, 64, p.repeatPenalty, 0.0f, 0.0f));
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
  Fill(logits);
  llama_token_data_array all{candidates_.data(), candidates_.size(), -1, false};
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
  Fill(logits);
  all = llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
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
  llama_sampler_accept(chain_, token);
  return true;
}

}  // namespace lp
