// The sampler chain (the same chain the benchmark's plain C++ loop uses) plus an optional grammar,
// sampled as llama.cpp's common_sampler does: rejection-first (run the chain, test only the
// chosen token against the grammar, constrain every candidate only when it is rejected), or
// grammar-first (constrain every candidate before the chain: the exact constrained distribution).
// The constraining pass is our mask engine (native/grammar/), or llama.cpp's own full pass.
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
  // true: the mask engine constrains the candidates; false: llama.cpp's full pass (the reference).
  bool fastGrammarResample = true;
  // Constrain before sampling instead of after a rejection (llama.cpp's grammar_first).
  bool grammarFirst = false;
};

class Sampler {
 public:
  // Builds the chain (and the grammar when `grammar` is non-null). On a bad grammar returns
  // nullptr with *error set. `vocabIndex` shares the grammar's vocabulary index between the
  // samplers of one model (nullptr: a private one).
  static std::unique_ptr<Sampler> Create(const llama_vocab* vocab, const SamplingParams& params, const GrammarParams* grammar,
                                         NativeError* error, grammar::VocabIndexHolder* vocabIndex = nullptr);
  ~Sampler();

  // Samples from the logits of the token at position `index` of the last batch `ctx` decoded
  // (-1: the last one that has logits; with several sequences in one batch, each its own). Returns
  // LLAMA_TOKEN_NULL with *error set when the grammar admits no candidate (ERR_GRAMMAR_DEAD_END).
  llama_token Sample(llama_context* ctx, int32_t index, NativeError* error);
  llama_token Sample(llama_context* ctx, NativeError* error) { return Sample(ctx, -1, error); }
  // The same from one row of logits (n_vocab floats).
  llama_token Sample(const float* logits, NativeError* error);
  // Advances grammar and chain state. False with *error set when the grammar cannot take it.
  bool Accept(llama_token token, NativeError* error);

  const grammar::GrammarState* grammarState() const { return grammar_.get(); }

 private:
  Sampler() = default;
  void Fill(const float* logits);
  llama_token SelectFrom(llama_token_data_array* array, NativeError* error);
  bool Constrain(llama_token_data_array* array, NativeError* error);

  llama_sampler* chain_ = nullptr;
  std::unique_ptr<grammar::GrammarState> grammar_;
  int32_t nVocab_ = 0;
  bool reference_ = false;
  bool grammarFirst_ = false;
  std::vector<llama_token_data> candidates_;  // reused every token: no per-token allocation
};

}  // namespace lp
