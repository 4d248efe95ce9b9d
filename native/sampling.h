// The sampler chain (the same chain the benchmark's plain C++ loop uses) plus an optional grammar,
// sampled rejection-first: run the chain, test only the chosen token against the grammar, and
// apply the grammar to every candidate only when that token is rejected.
#pragma once

#include <llama.h>

#include <memory>
#include <vector>

#include "common.h"
#include "grammar.h"

namespace lp {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t topK = 40;
  float topP = 0.95f;
  float minP = 0.05f;
  uint32_t seed = LLAMA_DEFAULT_SEED;
  float repeatPenalty = 1.0f;
  // After a grammar rejection, resample from the top candidates when that is provably the same
  // choice (sampling.cpp); false: always llama.cpp's full pass.
  bool fastGrammarResample = true;
};

class Sampler {
 public:
  // Builds the chain (and the grammar sampler when `grammar` is non-null). On a bad grammar
  // returns nullptr with *error set.
  static std::unique_ptr<Sampler> Create(const llama_vocab* vocab, const SamplingParams& params,
                                         const GrammarParams* grammar, NativeError* error);
  ~Sampler();

  // Samples from the logits of the token at position `index` of the last batch `ctx` decoded
  // (-1: the last one that has logits; with several sequences in one batch, each its own). Returns
  // LLAMA_TOKEN_NULL with *error set when the grammar admits no candidate (ERR_GRAMMAR_DEAD_END).
  llama_token Sample(llama_context* ctx, int32_t index, NativeError* error);
  llama_token Sample(llama_context* ctx, NativeError* error) { return Sample(ctx, -1, error); }
  // Advances grammar and chain state. False with *error set when the grammar cannot take it.
  bool Accept(llama_token token, NativeError* error);

 private:
  Sampler() = default;
  void Fill(const float* logits);
  llama_token SelectFrom(llama_token_data_array* array, NativeError* error);
  // The resample after a rejection, exact but cheaper: see sampling.cpp.
  bool ResampleFromTop(const float* logits, llama_token* out, NativeError* error);

  llama_sampler* chain_ = nullptr;
  llama_sampler* grammar_ = nullptr;
  int32_t nVocab_ = 0;
  bool greedy_ = false;
  bool penalties_ = false;
  bool fastResample_ = true;
  int32_t topK_ = 0;
  std::vector<llama_token_data> candidates_;  // reused every token: no per-token allocation
  std::vector<llama_token_data> top_;
};

}  // namespace lp
