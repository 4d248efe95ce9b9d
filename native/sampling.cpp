#include "sampling.h"

#include <cmath>
#include <string>

namespace lp {

std::unique_ptr<Sampler> Sampler::Create(const llama_vocab* vocab, const SamplingParams& p,
                                         const GrammarParams* grammar, NativeError* error) {
  std::unique_ptr<Sampler> s(new Sampler());
  s->nVocab_ = llama_vocab_n_tokens(vocab);
  s->candidates_.resize(static_cast<size_t>(s->nVocab_));
  if (grammar != nullptr) {
    s->grammar_ = CreateGrammarSampler(vocab, *grammar, error);
    if (s->grammar_ == nullptr) return nullptr;
  }
  llama_sampler_chain_params cp = llama_sampler_chain_default_params();
  cp.no_perf = true;
  s->chain_ = llama_sampler_chain_init(cp);
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
  if (grammar_ != nullptr) llama_sampler_free(grammar_);
}

void Sampler::Fill(const float* logits) {
  llama_token_data* d = candidates_.data();
  for (int32_t i = 0; i < nVocab_; i++) d[i] = llama_token_data{i, logits[i], 0.0f};
}

llama_token Sampler::Sample(llama_context* ctx, NativeError* error) {
  const float* logits = llama_get_logits_ith(ctx, -1);
  if (logits == nullptr) {
    *error = {"ERR_DECODE", "llama.cpp returned no logits for the last token"};
    return LLAMA_TOKEN_NULL;
  }
  Fill(logits);
  llama_token_data_array all{candidates_.data(), candidates_.size(), -1, false};
  llama_sampler_apply(chain_, &all);
  if (all.selected < 0 || static_cast<size_t>(all.selected) >= all.size) {
    *error = {"ERR_INTERNAL", "the sampler chain selected no token"};
    return LLAMA_TOKEN_NULL;
  }
  llama_token id = all.data[all.selected].id;
  if (grammar_ == nullptr) return id;

  llama_token_data single{id, 1.0f, 0.0f};
  llama_token_data_array one{&single, 1, -1, false};
  llama_sampler_apply(grammar_, &one);
  if (single.logit != -INFINITY) return id;

  // Rejected: constrain every candidate, then sample again.
  Fill(logits);
  all = llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
  llama_sampler_apply(grammar_, &all);
  bool any = false;
  for (size_t i = 0; i < all.size && !any; i++) any = all.data[i].logit != -INFINITY;
  if (!any) {
    *error = {"ERR_GRAMMAR_DEAD_END", "the grammar admits no token here (every candidate was rejected)"};
    return LLAMA_TOKEN_NULL;
  }
  llama_sampler_apply(chain_, &all);
  if (all.selected < 0 || static_cast<size_t>(all.selected) >= all.size || all.data[all.selected].logit == -INFINITY) {
    *error = {"ERR_GRAMMAR_DEAD_END", "the sampler chain left no token the grammar admits"};
    return LLAMA_TOKEN_NULL;
  }
  return all.data[all.selected].id;
}

bool Sampler::Accept(llama_token token, NativeError* error) {
  if (grammar_ != nullptr) {
    try {
      llama_sampler_accept(grammar_, token);
    } catch (const std::exception& e) {
      *error = {"ERR_GRAMMAR_DEAD_END", std::string("the grammar cannot continue: ") + e.what()};
      return false;
    }
  }
  llama_sampler_accept(chain_, token);
  return true;
}

}  // namespace lp
