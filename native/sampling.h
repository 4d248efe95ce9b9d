// The sampler chain (the same chain the benchmark's plain C++ loop uses) plus an optional grammar,
// sampled as llama.cpp's common_sampler does: rejection-first (run the chain, test only the
// chosen token against the grammar, constrain every candidate only when it is rejected), or
// grammar-first (constrain every candidate before the chain: the exact constrained distribution).
// The constraining pass is our mask engine (native/grammar/), or llama.cpp's own full pass.
#pragma once

#include <llama.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar.h"
#include "native-error.h"

namespace lp {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t topK = 40;
  float topP = 0.95f;
  float minP = 0.05f;
  uint32_t seed = LLAMA_DEFAULT_SEED;
  float repeatPenalty = 1.0f;
  float frequencyPenalty = 0.0f;  // OpenAI's, subtracted per occurrence in the last penaltyLastN tokens
  float presencePenalty = 0.0f;   // OpenAI's, subtracted once for any occurrence there
  int32_t penaltyLastN = 64;
  std::vector<llama_logit_bias> logitBias;  // added to the logits first (-inf bans a token)
  // Per token: the chosen token's log probability and the topLogprobs most likely tokens', from
  // the candidates after logit bias and penalties (before truncation, temperature and grammar).
  bool logprobs = false;
  int32_t topLogprobs = 0;
  // true: the mask engine constrains the candidates; false: llama.cpp's full pass (the reference).
  bool fastGrammarResample = true;
  // Constrain before sampling instead of after a rejection (llama.cpp's grammar_first).
  bool grammarFirst = false;
  // false: every token takes the full n_vocab path (the differential tests' reference). The
  // environment variable LLAMAPEG_SAMPLER_FULL=1, read when a sampler is created, does the same for
  // a whole process (the end-to-end test; not an API).
  bool fastSelect = true;
};

class Sampler {
 public:
  // Builds the chain (and the grammar when `grammar` is non-null). On a bad grammar returns
  // nullptr with *error set. `vocabIndex` shares the grammar's vocabulary index between the
  // samplers of one model (nullptr: a private one).
  static std::unique_ptr<Sampler> Create(const llama_vocab* vocab, const SamplingParams& params, const GrammarParams* grammar,
                                         NativeError* error, grammar::VocabIndexHolder* vocabIndex = nullptr);
  // Without a grammar, for rows of nVocab logits (tests and benchmarks without a vocabulary).
  static std::unique_ptr<Sampler> Create(int32_t nVocab, const SamplingParams& params);
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
  grammar::GrammarState* mutableGrammarState() { return grammar_.get(); }  // speculative.h's draft check
  // Fast-forward (native/forced-tokens.h): the grammar's forced text from here, and its
  // single-token check. Without a grammar: nothing is forced.
  std::string ForcedBytes(size_t maxBytes) { return grammar_ ? grammar_->ForcedBytes(maxBytes) : std::string(); }
  bool GrammarAdmits(llama_token token, NativeError* error);
  bool wantsLogprobs() const { return logprobs_; }
  // Whether unconstrained tokens take the fast path (SampleFast); for the differential tests.
  bool selectsFast() const { return fastK_ != 0; }
  // After Sample, with logprobs on: (token, log probability) pairs, the chosen token first, then
  // the top alternatives in order. Empty otherwise.
  const std::vector<int32_t>& extraIds() const { return extraIds_; }
  const std::vector<float>& extraValues() const { return extraValues_; }

 private:
  Sampler() = default;
  void Fill(const float* logits);
  llama_token SelectFrom(llama_token_data_array* array, NativeError* error);
  bool Constrain(llama_token_data_array* array, NativeError* error);

  llama_token SampleInner(const float* logits, NativeError* error);
  llama_token SampleFull(const float* logits, bool constrained, NativeError* error);
  llama_token SampleFast(const float* logits, NativeError* error);
  llama_token AdmitOrResample(const float* logits, llama_token id, NativeError* error);
  void NoteChanged(const float* logits);
  void Prepare(const float* logits, llama_token_data_array* all);
  void NoteLogprobs(llama_token chosen);

  llama_sampler* pre_ = nullptr;    // logit bias, penalties (nullptr: none)
  llama_sampler* chain_ = nullptr;  // selection
  // The fast path (SampleFast): used when the chain can only choose among the top k (1..128) or
  // is greedy, and no logprobs are wanted. fastK_ 0: off; -1: greedy.
  int32_t fastK_ = 0;
  std::vector<llama_logit_bias> bias_;      // the logit bias entries for ids in range, in order
  llama_sampler* penalties_ = nullptr;      // pre_'s penalties sampler (nullptr: none)
  int32_t penaltyLastN_ = 0;
  std::vector<llama_token> window_;         // the last penaltyLastN_ accepted tokens, oldest first
  std::vector<int32_t> changedAt_;          // id -> its index in changed_, -1: unchanged
  std::vector<uint64_t> changedBits_;       // bit id: id is in changed_ (the row scan's check)
  std::vector<llama_token_data> changed_;   // the ids pre_ changes at this step, changed values
  std::vector<llama_token_data> picked_;    // the top k candidates
  bool logprobs_ = false;
  int32_t topLogprobs_ = 0;
  float logSum_ = 0;                      // log of the softmax denominator
  std::vector<float> adjusted_;           // logits after pre_, by id (logprobs only)
  std::vector<llama_token_data> top_;     // the top candidates (logprobs only)
  std::vector<int32_t> extraIds_;
  std::vector<float> extraValues_;
  std::unique_ptr<grammar::GrammarState> grammar_;
  std::shared_ptr<grammar::GrammarPool> pool_;  // where grammar_ goes back when this sampler ends
  std::string poolKey_;
  int32_t nVocab_ = 0;
  bool reference_ = false;
  bool grammarFirst_ = false;
  std::vector<llama_token_data> candidates_;  // the full path's array, reused: no per-token allocation
};

}  // namespace lp
