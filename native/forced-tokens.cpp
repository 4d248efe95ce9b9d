// Fast-forward (forced-tokens.h).
#include "forced-tokens.h"

#include <algorithm>

#include "generation.h"
#include "grammar/forced.h"
#include "llama-vocab.h"
#include "model.h"
#include "sampling.h"

namespace lp {
namespace {

struct RenderArg {
  const GenerationParams* params;
};

bool Renderable(const llama_vocab* vocab, llama_token t, const void* arg) {
  const GenerationParams& p = *static_cast<const RenderArg*>(arg)->params;
  if (!(llama_vocab_get_attr(vocab, t) & LLAMA_TOKEN_ATTR_CONTROL)) return true;
  // A control token's text reaches the output only where the generation renders it.
  return p.special || std::binary_search(p.preserved.begin(), p.preserved.end(), t);
}

}  // namespace

namespace {

// The forced run after a token whose piece is `before`, at most maxTokens of it, accepted into the
// sampler and emitted (marked forced); counted in the stats.
bool TakeForced(GenerationJob& job, const llama_vocab* vocab, const std::string& before, size_t maxTokens, std::vector<llama_token>* out,
                NativeError* error) {
  out->clear();
  if (maxTokens == 0) return true;
  std::string forced = job.sampler->ForcedBytes(kForcedMaxBytes);
  if (forced.empty()) return true;
  const GenerationParams& p = job.params;
  RenderArg arg{&p};
  std::vector<llama_token> tokens = grammar::TokenizeForced(vocab, before, forced, Renderable, &arg);
  if (!tokens.empty()) tokens.pop_back();  // may merge with the text after the choice point
  if (tokens.size() > maxTokens) tokens.resize(maxTokens);
  const bool logprobs = job.sampler->wantsLogprobs();
  for (llama_token t : tokens) {
    if (llama_vocab_is_eog(vocab, t) || std::binary_search(p.stopTokens.begin(), p.stopTokens.end(), t)) break;
    if (!job.sampler->GrammarAdmits(t, error)) {
      if (!error->ok()) return false;
      break;
    }
    if (!job.sampler->Accept(t, error)) return false;
    out->push_back(t);
    // The grammar admits nothing else here: log probability 0 under it (marked forced).
    TokenExtra extra;
    if (logprobs) {
      extra.ids.push_back(t);
      extra.values.push_back(0.0f);
    }
    job.Emit(t, TokenToPiece(vocab, t, p.special || std::binary_search(p.preserved.begin(), p.preserved.end(), t)),
             logprobs ? &extra : nullptr, true);
    // The reasoning budget ran out on this token: its end marker comes next, not more of this run.
    if (job.budget && job.budget->Forcing()) break;
  }
  if (!out->empty()) {
    job.stats.forcedTokens += static_cast<uint32_t>(out->size());
    job.stats.forcedRuns++;
    job.stats.generatedTokens += static_cast<uint32_t>(out->size());
  }
  return true;
}

}  // namespace

bool QueueForced(GenerationJob& job, const llama_vocab* vocab, llama_token sampled, size_t maxTokens, NativeError* error) {
  return TakeForced(job, vocab, vocab->token_to_piece(sampled), maxTokens, &job.forced, error);
}

bool StartForced(GenerationJob& job, const llama_vocab* vocab, llama_token last, size_t maxTokens, bool* started, NativeError* error) {
  *started = false;
  std::vector<llama_token> tokens;
  if (!TakeForced(job, vocab, vocab->token_to_piece(last), maxTokens, &tokens, error)) return false;
  if (tokens.empty()) return true;
  job.pending = tokens.front();
  job.forced.assign(tokens.begin() + 1, tokens.end());
  *started = true;
  return true;
}

bool StartBudgetForced(GenerationJob& job, const llama_vocab* vocab, size_t maxTokens, bool* started, NativeError* error) {
  *started = false;
  std::vector<llama_token> tokens = job.budget->Remaining();
  if (tokens.size() > maxTokens) tokens.resize(maxTokens);
  const GenerationParams& p = job.params;
  const bool logprobs = job.sampler->wantsLogprobs();
  std::vector<llama_token> taken;
  for (llama_token t : tokens) {
    if (!job.sampler->GrammarAdmits(t, error)) {
      if (!error->ok()) return false;
      break;
    }
    if (!job.sampler->Accept(t, error)) return false;
    taken.push_back(t);
    TokenExtra extra;
    if (logprobs) {
      extra.ids.push_back(t);
      extra.values.push_back(0.0f);
    }
    job.Emit(t, TokenToPiece(vocab, t, p.special || std::binary_search(p.preserved.begin(), p.preserved.end(), t)), logprobs ? &extra : nullptr, true, true);
  }
  // Refused by the grammar, or no room left in the sequence: the model goes on by itself.
  if ((taken.size() < tokens.size() || tokens.empty()) && job.budget->Forcing()) job.budget->GiveUp();
  if (taken.empty()) return true;
  job.stats.generatedTokens += static_cast<uint32_t>(taken.size());
  job.stats.reasoningForcedTokens += static_cast<uint32_t>(taken.size());
  job.pending = taken.front();
  job.forced.assign(taken.begin() + 1, taken.end());
  *started = true;
  return true;
}

}  // namespace lp
