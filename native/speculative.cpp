// Prompt-lookup speculative decoding (speculative.h): the draft, its grammar check, and the decode
// loop's part (draft after a sample, into the batch, verification after the decode).
#include "speculative.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "context.h"
#include "generation.h"
#include "grammar/grammar-state.h"
#include "llama-grammar.h"
#include "llama-vocab.h"

namespace lp {

void NgramDraft(const std::vector<llama_token>& history, llama_token last, const DraftParams& params, size_t maxTokens,
                std::vector<llama_token>* out) {
  out->clear();
  const size_t len = history.size() + 1;  // history, then `last`
  auto at = [&](size_t i) { return i + 1 == len ? last : history[i]; };
  if (maxTokens == 0 || params.ngramMin == 0) return;
  const size_t nMax = std::min<size_t>(params.ngramMax, len - 1);
  for (size_t n = nMax; n >= params.ngramMin && n > 0; n--) {
    // The most recent start j < len - n whose n tokens equal the last n (so at least one token
    // follows the match before the history ends).
    const size_t tail = len - n;
    for (size_t j = tail; j-- > 0;) {
      if (at(j + n - 1) != last) continue;
      size_t k = 0;
      while (k < n && at(j + k) == at(tail + k)) k++;
      if (k < n) continue;
      const size_t from = j + n;
      const size_t count = std::min(maxTokens, len - from);
      if (count < params.draftMin) break;  // the most recent match is too short: try a shorter n
      for (size_t i = 0; i < count; i++) out->push_back(at(from + i));
      return;
    }
  }
}

size_t GrammarPrefix(grammar::GrammarState* grammar, const llama_vocab* vocab, const llama_token* draft, size_t n) {
  if (grammar == nullptr || grammar->awaitingTrigger() || n == 0) return n;
  llama_grammar* g = grammar->SyncedLlamaGrammar();
  llama_grammar_stacks saved = g->stacks;
  const llama_partial_utf8 savedPartial = g->partial_utf8;
  size_t k = 0;
  try {
    for (; k < n; k++) {
      llama_token_data one{draft[k], 1.0f, 0.0f};
      llama_token_data_array array{&one, 1, -1, false};
      llama_grammar_apply_impl(*g, &array);
      if (one.logit == -INFINITY) break;
      llama_grammar_accept_token(*g, draft[k], vocab->token_to_piece(draft[k]));
    }
  } catch (const std::exception&) {
    // (accept throws when no stack survives; apply admitted the token, so this is defensive)
  }
  g->stacks = std::move(saved);
  g->partial_utf8 = savedPartial;
  return k;
}

void ContextCore::TrimDraft(GenerationJob& job, int32_t room) {
  // room: batch places this job may take now, its sampled token included.
  if (job.draft.empty()) return;
  const int32_t fits = room - 1 - static_cast<int32_t>(job.forced.size());
  if (fits < static_cast<int32_t>(std::max<uint32_t>(1, job.params.draft.draftMin))) {
    job.draft.clear();
  } else if (static_cast<size_t>(fits) < job.draft.size()) {
    job.draft.resize(static_cast<size_t>(fits));
  }
}

void ContextCore::AddDraft(GenerationJob& job, llama_pos at) {
  for (size_t i = 0; i < job.draft.size(); i++) Add(job.draft[i], at + static_cast<llama_pos>(i), job.seq, true);
}

void ContextCore::VerifyDraft(GenerationJob& job) {
  // The logits of the sampled token and of every draft token, in order: the sampler runs on each
  // as it would have one step at a time, and a draft token stays where it chose that very token.
  // The first token it chose otherwise (or the one after a fully accepted draft) is the next
  // pending token; the cells of the draft after it are dropped.
  std::vector<llama_token> draft;
  draft.swap(job.draft);
  std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  const int32_t base = job.batchIndex;
  job.stats.draftTokens += static_cast<uint32_t>(draft.size());
  for (size_t i = 0;; i++) {
    job.batchIndex = base + static_cast<int32_t>(i);
    SampleOne(job);
    // (maxTokens reached at a draft token: it was emitted, and nothing needs its cell)
    if (job.phase == GenerationJob::Phase::Done || i == draft.size() || job.pending != draft[i]) break;
    job.stats.draftAcceptedTokens++;
    // Fast-forward queued forced text after it, or the reasoning budget ran out on it: that text
    // goes into the next batch behind this token, which is decoded again there (its cell is
    // dropped below with the rest of the draft).
    if (!job.forced.empty() || (job.budget && job.budget->Forcing())) break;
    cached.push_back(draft[i]);
  }
  job.batchIndex = base;
  llama_memory_t mem = llama_get_memory(ctx_);
  if (!llama_memory_seq_rm(mem, job.seq, static_cast<llama_pos>(cached.size()), -1)) ForgetCells(job.seq);
}

void ContextCore::MakeDraft(GenerationJob& job) {
  const GenerationParams& p = job.params;
  if (p.draft.draftMax == 0 || needsCheckpoints_ || job.phase != GenerationJob::Phase::Generating || !job.forced.empty()) return;
  if (job.budget && job.budget->Forcing()) return;  // the budget's end marker comes next
  const std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  // Room: the batch (with the pending token), the sequence, and the tokens maxTokens still allows
  // (the draft's last token may be the one that reaches it: it is emitted without being decoded).
  size_t room = std::min<size_t>(p.draft.draftMax, batchSize_ - 1);
  room = std::min(room, sequenceSize_ > cached.size() + 1 ? sequenceSize_ - cached.size() - 1 : 0);
  if (p.maxTokens >= 0) room = std::min<size_t>(room, static_cast<size_t>(std::max<int64_t>(0, p.maxTokens - job.stats.generatedTokens)));
  if (room < std::max<uint32_t>(1, p.draft.draftMin)) return;
  NgramDraft(cached, job.pending, p.draft, room, &job.draft);
  // Never an end: an EOG or stop token ends the generation when sampled, nothing follows it.
  const llama_vocab* vocab = model_->vocab;
  for (size_t i = 0; i < job.draft.size(); i++) {
    const llama_token t = job.draft[i];
    if (llama_vocab_is_eog(vocab, t) || std::binary_search(p.stopTokens.begin(), p.stopTokens.end(), t)) {
      job.draft.resize(i);
      break;
    }
  }
  // Under a grammar, only what it takes from here (the sampler would reject the rest anyway).
  if (!job.draft.empty()) job.draft.resize(GrammarPrefix(job.sampler->mutableGrammarState(), vocab, job.draft.data(), job.draft.size()));
  if (job.draft.size() < p.draft.draftMin) job.draft.clear();
}

}  // namespace lp
