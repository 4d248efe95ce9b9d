#include "sampling.h"

#include <algorithm>
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
  s->greedy_ = p.temperature <= 0.0f;
  s->penalties_ = p.repeatPenalty != 1.0f;
  s->topK_ = p.topK;
  s->fastResample_ = p.fastGrammarResample;
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

llama_token Sampler::Sample(llama_context* ctx, int32_t index, NativeError* error) {
  const float* logits = llama_get_logits_ith(ctx, index);
  if (logits == nullptr) {
    *error = {"ERR_DECODE", "llama.cpp returned no logits for batch position " + std::to_string(index)};
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

  // Rejected: sample again from the candidates the grammar admits.
  llama_token resampled = LLAMA_TOKEN_NULL;
  if (ResampleFromTop(logits, &resampled, error)) return resampled;
  if (!error->ok()) return LLAMA_TOKEN_NULL;

  // llama.cpp's way: constrain every candidate, then run the chain again.
  Fill(logits);
  all = llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
  llama_sampler_apply(grammar_, &all);
  bool any = false;
  for (size_t i = 0; i < all.size && !any; i++) any = all.data[i].logit != -INFINITY;
  if (!any) {
    *error = {"ERR_GRAMMAR_DEAD_END", "the grammar admits no token here (every candidate was rejected)"};
    return LLAMA_TOKEN_NULL;
  }
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

// Checking every vocabulary entry against the grammar (what llama.cpp does after a rejection)
// costs milliseconds on a 150k vocabulary. The chain keeps only the top-k candidates by logit
// (greedy: the top one), so when the grammar admits at least k of the N highest-logit candidates,
// running grammar and chain on those N picks exactly what the full pass would: every admitted
// candidate outside them ranks below k admitted ones inside. Needs a chain whose candidate set is
// decided by rank first: not with repeat penalties (they reorder logits) or top-k disabled.
bool Sampler::ResampleFromTop(const float* logits, llama_token* out, NativeError* error) {
  if (!fastResample_ || penalties_ || (!greedy_ && topK_ <= 0)) return false;
  const size_t need = greedy_ ? 1 : static_cast<size_t>(topK_);
  auto byLogit = [](const llama_token_data& a, const llama_token_data& b) { return a.logit > b.logit; };
  auto byId = [](const llama_token_data& a, const llama_token_data& b) { return a.id < b.id; };
  // Widen the subset when too few of the top candidates are admitted, before giving up.
  for (size_t n = std::max<size_t>(1024, need * 16); n < candidates_.size(); n *= 16) {
    Fill(logits);
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n), candidates_.end(), byLogit);
    // A candidate tied with the lowest logit inside may sit outside the subset: rank is ambiguous.
    float cut = candidates_[0].logit;
    for (size_t i = 0; i < n; i++) cut = std::min(cut, candidates_[i].logit);
    bool tie = false;
    for (size_t i = n; i < candidates_.size() && !tie; i++) tie = candidates_[i].logit >= cut;
    if (tie) return false;
    // Keep llama.cpp's candidate order (by id) inside the subset so ties resolve as in a full pass.
    std::sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n), byId);
    top_.assign(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n));
    llama_token_data_array sub{top_.data(), top_.size(), -1, false};
    llama_sampler_apply(grammar_, &sub);
    size_t admitted = 0;
    for (size_t i = 0; i < sub.size; i++) admitted += sub.data[i].logit != -INFINITY ? 1 : 0;
    if (admitted >= need) {
      *out = SelectFrom(&sub, error);
      return *out != LLAMA_TOKEN_NULL;
    }
  }
  return false;
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
