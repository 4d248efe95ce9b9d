// Speculative decoding (speculative.h): the drafts (prompt lookup, a draft model), their grammar
// check, and the decode loop's part (draft after a sample, into the batch, verification after the
// decode).
#include "speculative.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

namespace {

std::string Piece(const llama_vocab* vocab, llama_token token) {
  char buf[256];
  const int32_t n = llama_token_to_piece(vocab, token, buf, sizeof buf, 0, false);
  if (n >= 0) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(-n), '\0');
  const int32_t m = llama_token_to_piece(vocab, token, big.data(), -n, 0, false);
  big.resize(m > 0 ? static_cast<size_t>(m) : 0);
  return big;
}

// Appends `bytes` as the inside of a JSON string (bytewise: UTF-8 passes through).
void AppendEscaped(std::string* out, const std::string& bytes) {
  static const char hex[] = "0123456789abcdef";
  for (unsigned char c : bytes) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(hex[c >> 4]);
          out->push_back(hex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
}

// The start of the most recent occurrence of key[0, n) in text[0, end) that ends before `end` (at
// least one byte follows it), or npos.
size_t LastOccurrence(const std::string& text, size_t end, const char* key, size_t n) {
  if (n == 0 || end < n + 1) return std::string::npos;
  const char* base = text.data();
  // the key's last byte at an index in [n - 1, hi), from the right
  for (size_t hi = end - 1; hi > n - 1;) {
    const void* hit = memrchr(base + n - 1, key[n - 1], hi - (n - 1));
    if (hit == nullptr) break;
    const size_t i = static_cast<size_t>(static_cast<const char*>(hit) - base);
    if (std::memcmp(base + i + 1 - n, key, n) == 0) return i + 1 - n;
    hi = i;
  }
  return std::string::npos;
}

}  // namespace

void TextHistory::Push(const llama_vocab* vocab, llama_token token) {
  const std::string piece = Piece(vocab, token);
  raw += piece;
  AppendEscaped(&escaped, piece);
  tokens.push_back(token);
}

void TextHistory::Sync(const llama_vocab* vocab, const std::vector<llama_token>& cached) {
  const bool continues = tokens.size() <= cached.size() && std::equal(tokens.begin(), tokens.end(), cached.begin());
  if (!continues) {
    raw.clear();
    escaped.clear();
    tokens.clear();
  }
  for (size_t i = tokens.size(); i < cached.size(); i++) Push(vocab, cached[i]);
}

void TextDraft(TextHistory* history, const llama_vocab* vocab, llama_token last, size_t maxTokens, std::vector<llama_token>* out) {
  out->clear();
  if (maxTokens == 0) return;
  // `last` joins the history for the lookup only (it is not decoded yet).
  const size_t rawSize = history->raw.size(), escapedSize = history->escaped.size();
  const std::string lastPiece = Piece(vocab, last);
  history->raw += lastPiece;
  AppendEscaped(&history->escaped, lastPiece);
  const std::string& raw = history->raw;
  std::string text;
  for (size_t n : {size_t{16}, size_t{8}}) {
    if (raw.size() < n + 1 || !text.empty()) break;
    const char* key = raw.data() + raw.size() - n;
    // Whitespace runs are where tokenizations part most (a run merges into one token or several):
    // a key of mostly blanks drafts what the model then writes in other tokens.
    if (std::count_if(key, key + n, [](char c) { return c != ' ' && c != '\t' && c != '\n' && c != '\r'; }) < static_cast<std::ptrdiff_t>(n / 2)) break;
    for (const std::string* view : {&history->raw, &history->escaped}) {
      // (in the raw text the key itself ends the text; the match must end before it)
      const size_t at = LastOccurrence(*view, view == &history->raw ? raw.size() - 1 : view->size(), key, n);
      if (at == std::string::npos) continue;
      const size_t from = at + n;
      const size_t want = std::min<size_t>(view->size() - from, 24 * maxTokens + 8);
      text.assign(*view, from, want);
      break;
    }
  }
  history->raw.resize(rawSize);
  history->escaped.resize(escapedSize);
  if (text.empty()) return;
  // A word cut short tokenizes otherwise: end the text before its last space or newline (the
  // next word's own start), else drop the last token.
  bool cut = text.size() == 24 * maxTokens + 8;
  if (cut) {
    const size_t space = text.find_last_of(" \n");
    if (space != std::string::npos && space > 0) {
      text.resize(space);
      cut = false;
    }
  }
  std::vector<llama_token> tokens(text.size() + 2);
  const int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(), static_cast<int32_t>(tokens.size()), false, false);
  if (n <= 0) return;
  tokens.resize(static_cast<size_t>(n) - (cut ? 1 : 0));
  if (tokens.size() > maxTokens) tokens.resize(maxTokens);
  out->swap(tokens);
}

bool DraftCompatible(const llama_model* target, const llama_model* draft, std::string* why) {
  const llama_vocab* vt = llama_model_get_vocab(target);
  const llama_vocab* vd = llama_model_get_vocab(draft);
  if (llama_vocab_type(vt) != llama_vocab_type(vd)) {
    *why = "its tokenizer type differs from the model's";
    return false;
  }
  if (llama_vocab_get_add_bos(vt) != llama_vocab_get_add_bos(vd) || (llama_vocab_get_add_bos(vt) && llama_vocab_bos(vt) != llama_vocab_bos(vd))) {
    *why = "its BOS token differs from the model's";
    return false;
  }
  if (llama_vocab_get_add_eos(vt) != llama_vocab_get_add_eos(vd) || (llama_vocab_get_add_eos(vt) && llama_vocab_eos(vt) != llama_vocab_eos(vd))) {
    *why = "its EOS token differs from the model's";
    return false;
  }
  const int32_t nt = llama_vocab_n_tokens(vt), nd = llama_vocab_n_tokens(vd);
  if (std::abs(nt - nd) > 128) {
    *why = "its vocabulary has " + std::to_string(nd) + " tokens, the model's " + std::to_string(nt);
    return false;
  }
  for (int32_t i = 0; i < std::min(nt, nd); i++) {
    if (std::strcmp(llama_vocab_get_text(vt, i), llama_vocab_get_text(vd, i)) != 0) {
      *why = "token " + std::to_string(i) + " is another text in its vocabulary";
      return false;
    }
  }
  return true;
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

// The next draft's length limit: twice as long after a draft taken whole (up to draftMax), as
// long as the part kept (at least 2) after one cut short. A draft that goes wrong costs a
// verification batch of its length; on a CPU that is most of a step per few tokens, so drafts
// start short where they have just failed and grow while they hold (llama.cpp's are fixed).
void ContextCore::AdaptDraftLimit(GenerationJob& job, uint32_t drafted, uint32_t kept) {
  const DraftParams& d = job.params.draft;
  const uint32_t limit = job.draftLimit > 0 ? job.draftLimit : d.draftMax;
  const uint32_t floor = std::max<uint32_t>(2, d.draftMin);
  job.draftLimit = kept >= drafted ? std::min(d.draftMax, std::max(limit, 2 * drafted))
                                   : std::min(d.draftMax, std::max(floor, kept));
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
  const uint32_t acceptedBefore = job.stats.draftAcceptedTokens;
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
  AdaptDraftLimit(job, static_cast<uint32_t>(draft.size()), job.stats.draftAcceptedTokens - acceptedBefore);
  llama_memory_t mem = llama_get_memory(ctx_);
  if (!llama_memory_seq_rm(mem, job.seq, static_cast<llama_pos>(cached.size()), -1)) ForgetCells(job.seq);
}

void ContextCore::DraftFromModel(GenerationJob& job, size_t room, std::vector<llama_token>* out) {
  out->clear();
  const int32_t seq = job.seq;
  std::vector<llama_token>& mirror = draftMirror_[static_cast<size_t>(seq)];
  const std::vector<llama_token>& cached = slots_[static_cast<size_t>(seq)].tokens;
  llama_memory_t mem = llama_get_memory(draftCtx_);
  auto fail = [&] {
    llama_memory_seq_rm(mem, seq, -1, -1);
    mirror.clear();
    out->clear();
  };
  // The draft cells follow the target's tokens: keep their common prefix, decode the rest and the
  // pending token (logits for that one only).
  size_t n = 0;
  while (n < mirror.size() && n < cached.size() && mirror[n] == cached[n]) n++;
  if (n < mirror.size()) {
    if (!llama_memory_seq_rm(mem, seq, static_cast<llama_pos>(n), -1)) {
      llama_memory_seq_rm(mem, seq, -1, -1);
      n = 0;
    }
    mirror.resize(n);
  }
  std::vector<llama_token> todo(cached.begin() + static_cast<std::ptrdiff_t>(n), cached.end());
  todo.push_back(job.pending);
  for (size_t i = 0; i < todo.size();) {
    const size_t m = std::min<size_t>(todo.size() - i, batchSize_);
    draftBatch_.n_tokens = 0;
    for (size_t k = 0; k < m; k++) BatchAdd(draftBatch_, todo[i + k], static_cast<llama_pos>(mirror.size() + k), seq, i + k + 1 == todo.size());
    if (llama_decode(draftCtx_, draftBatch_) != 0) return fail();
    mirror.insert(mirror.end(), todo.begin() + static_cast<std::ptrdiff_t>(i), todo.begin() + static_cast<std::ptrdiff_t>(i + m));
    i += m;
  }
  // Its greedy continuation (llama.cpp's draft sampler is greedy too), under the generation's
  // grammar where one is active: the most likely token the grammar takes (looked for among the
  // draft's 64 most likely, then 512, then 4,096), walked on a copy of the grammar's stacks.
  // llama.cpp drafts without the grammar, so under one its drafts are mostly thrown away. A token
  // the target's vocabulary lacks, one less likely than pMin, or none admitted among the 4,096,
  // ends the draft.
  const llama_vocab* vocab = model_->vocab;
  const int32_t nTarget = llama_vocab_n_tokens(vocab);
  const float pMin = job.params.draft.pMin;
  grammar::GrammarState* state = job.sampler->mutableGrammarState();
  llama_grammar* g = state != nullptr && !state->awaitingTrigger() ? state->SyncedLlamaGrammar() : nullptr;
  llama_grammar_stacks savedStacks;
  llama_partial_utf8 savedPartial{};
  if (g != nullptr) {
    savedStacks = g->stacks;
    savedPartial = g->partial_utf8;
  }
  std::vector<int32_t> order;
  auto admitted = [&](llama_token t) {
    llama_token_data one{t, 1.0f, 0.0f};
    llama_token_data_array array{&one, 1, -1, false};
    llama_grammar_apply_impl(*g, &array);
    return one.logit != -INFINITY;
  };
  try {
    while (out->size() < room) {
      const float* logits = llama_get_logits_ith(draftCtx_, -1);
      if (logits == nullptr) break;
      int32_t best = -1;
      if (g == nullptr) {
        float top = -INFINITY;
        for (int32_t t = 0; t < draftVocab_; t++) {
          if (logits[t] > top) {
            top = logits[t];
            best = t;
          }
        }
      } else {
        order.resize(static_cast<size_t>(draftVocab_));
        for (int32_t t = 0; t < draftVocab_; t++) order[static_cast<size_t>(t)] = t;
        const auto higher = [&](int32_t a, int32_t b) { return logits[a] > logits[b]; };
        size_t done = 0;
        for (size_t stage : {size_t{64}, size_t{512}, size_t{4096}}) {
          const size_t k = std::min(stage, order.size());
          // the next ranks, sorted (the ones before are sorted and rejected already)
          std::partial_sort(order.begin() + static_cast<std::ptrdiff_t>(done), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), higher);
          for (size_t i = done; i < k && best < 0; i++) {
            if (order[i] < nTarget && admitted(order[i])) best = order[i];
          }
          done = k;
          if (best >= 0 || k == order.size()) break;
        }
      }
      if (best < 0 || best >= nTarget || !std::isfinite(logits[best])) break;
      if (pMin > 0.0f) {
        double sum = 0;
        for (int32_t t = 0; t < draftVocab_; t++) sum += std::exp(static_cast<double>(logits[t] - logits[best]));
        if (1.0 / sum < pMin) break;
      }
      if (g != nullptr) llama_grammar_accept_token(*g, best, vocab->token_to_piece(best));
      out->push_back(best);
      if (out->size() == room) break;  // the last one needs no logits
      draftBatch_.n_tokens = 0;
      BatchAdd(draftBatch_, best, static_cast<llama_pos>(mirror.size()), seq, true);
      if (llama_decode(draftCtx_, draftBatch_) != 0) {
        fail();
        break;
      }
      mirror.push_back(best);
    }
  } catch (const std::exception&) {
    // (accept throws when no stack survives; apply admitted the token, so this is defensive)
  }
  if (g != nullptr) {
    g->stacks = std::move(savedStacks);
    g->partial_utf8 = savedPartial;
  }
}

void ContextCore::MakeDraft(GenerationJob& job) {
  const GenerationParams& p = job.params;
  if (p.draft.draftMax == 0 || needsCheckpoints_ || job.phase != GenerationJob::Phase::Generating || !job.forced.empty()) return;
  if (job.budget && job.budget->Forcing()) return;  // the budget's end marker comes next
  const std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  // Room: the batch (with the pending token), the sequence, and the tokens maxTokens still allows
  // (the draft's last token may be the one that reaches it: it is emitted without being decoded).
  size_t room = std::min<size_t>(job.draftLimit > 0 ? job.draftLimit : p.draft.draftMax, batchSize_ - 1);
  room = std::min(room, sequenceSize_ > cached.size() + 1 ? sequenceSize_ - cached.size() - 1 : 0);
  if (p.maxTokens >= 0) room = std::min<size_t>(room, static_cast<size_t>(std::max<int64_t>(0, p.maxTokens - job.stats.generatedTokens)));
  if (room < std::max<uint32_t>(1, p.draft.draftMin)) return;
  if (p.draft.model) {
    if (draftCtx_ == nullptr) return;
    DraftFromModel(job, room, &job.draft);
  } else {
    NgramDraft(cached, job.pending, p.draft, room, &job.draft);
    if (job.draft.size() < std::max<uint32_t>(1, p.draft.draftMin) && p.draft.textLookup) {
      // (the decode loop has no handler: a tokenizer that throws on odd text only costs the draft)
      try {
        job.draftText.Sync(model_->vocab, cached);
        TextDraft(&job.draftText, model_->vocab, job.pending, room, &job.draft);
      } catch (const std::exception&) {
        job.draft.clear();
        job.draftText = TextHistory{};
      }
    }
  }
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
  // With fast-forward, also not past a token after which the grammar forces text: the forced run
  // is decoded after that token (VerifyDraft stops there), so the rest of the draft would be lost.
  if (!job.draft.empty()) {
    grammar::GrammarState* state = job.sampler->mutableGrammarState();
    const ptrdiff_t walked = state != nullptr ? state->DraftPrefix(job.draft.data(), job.draft.size(), p.fastForward) : -1;
    job.draft.resize(walked >= 0 ? static_cast<size_t>(walked) : GrammarPrefix(state, vocab, job.draft.data(), job.draft.size()));
  }
  if (job.draft.size() < p.draft.draftMin) job.draft.clear();
}

}  // namespace lp
