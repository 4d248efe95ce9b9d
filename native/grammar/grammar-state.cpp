#include "grammar-state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "forced.h"
#include "llama-vocab.h"
#include "parse.h"

namespace lp::grammar {
namespace {

// Interning tables and memoized transitions grow with the stacks a generation visits; past this
// the engine starts over from the current stacks (the position cache survives).
constexpr size_t kEngineBudget = 256u << 20;
// Cached positions (bits per accepted token for wide positions).
constexpr size_t kCacheBudget = 256u << 20;

const std::string& PieceOf(const llama_vocab* vocab, llama_token token) { return vocab->token_to_piece(token); }

}  // namespace

std::unique_ptr<GrammarState> GrammarState::Create(const llama_vocab* vocab, VocabIndexHolder* holder, const GrammarSpec& spec,
                                                   Failure* error) {
  std::unique_ptr<GrammarState> g(new GrammarState());
  g->vocab_ = vocab;
  if (holder == nullptr) {
    g->ownHolder_ = std::make_unique<VocabIndexHolder>();
    holder = g->ownHolder_.get();
  }
  g->holder_ = holder;
  const int32_t nVocab = llama_vocab_n_tokens(vocab);
  for (llama_token t : spec.triggerTokens) {
    if (t < 0 || t >= nVocab) {
      *error = {kInvalid, "trigger token " + std::to_string(t) + " is outside the vocabulary"};
      return nullptr;
    }
  }
  if (spec.lazy) {
    std::string why;
    g->triggers_ = TriggerMatcher::Create(spec.triggerPatterns, &why);
    if (!g->triggers_) {
      *error = {kInvalid, "invalid " + why};
      return nullptr;
    }
    g->triggerTokens_ = spec.triggerTokens;
    g->awaiting_ = true;
  }
  g->grammar_ = ParseGrammar(vocab, spec, error, &g->rootRule_);
  if (g->grammar_ == nullptr) return nullptr;
  for (const auto& rule : g->grammar_->rules) {
    for (const auto& e : rule) g->hasTokenElements_ |= IsTokenTop(&e);
  }
  g->engine_ = std::make_unique<StackEngine>(&g->grammar_->rules);
  g->start_ = g->grammar_->stacks;
  std::vector<StackId> start;
  for (const auto& stack : g->grammar_->stacks) start.push_back(g->engine_->FromLlama(stack));
  g->set_ = g->engine_->InternSet(&start);
  if (g->engine_->failed()) {
    *error = {kInvalid, "invalid GBNF grammar: " + g->engine_->error()};
    return nullptr;
  }
  // The prompt already holds the prefill: advance the grammar past it, as llama.cpp's
  // common_sampler_init does with the generation prompt.
  for (size_t i = 0; i < spec.prefillTokens.size(); i++) {
    llama_token t = spec.prefillTokens[i];
    Failure f;
    if (!g->Accept(t, &f)) {
      *error = {kInvalid, "the grammar does not accept its prefill at token " + std::to_string(i) + " (" + std::to_string(t) + "): " + f.message};
      return nullptr;
    }
  }
  return g;
}

std::string GrammarState::PoolKey(const GrammarSpec& spec) {
  std::string key;
  const auto put = [&key](const std::string& v) {
    key += std::to_string(v.size());
    key += ':';
    key += v;
  };
  put(spec.gbnf);
  put(spec.root);
  key += spec.lazy ? 'L' : 'E';
  return key;
}

bool GrammarState::Reset(const GrammarSpec& spec, Failure* error) {
  const int32_t nVocab = llama_vocab_n_tokens(vocab_);
  for (llama_token t : spec.triggerTokens) {
    if (t < 0 || t >= nVocab) {
      *error = {kInvalid, "trigger token " + std::to_string(t) + " is outside the vocabulary"};
      return false;
    }
  }
  triggers_.reset();
  triggerTokens_.clear();
  awaiting_ = false;
  if (spec.lazy) {
    std::string why;
    triggers_ = TriggerMatcher::Create(spec.triggerPatterns, &why);
    if (!triggers_) {
      *error = {kInvalid, "invalid " + why};
      return false;
    }
    triggerTokens_ = spec.triggerTokens;
    awaiting_ = true;
  }
  positions_.clear();
  byId_.clear();
  partialValue_ = 0;
  partialRemain_ = 0;
  stats_ = GrammarStats{};
  std::vector<StackId> start;
  for (const auto& stack : start_) start.push_back(engine_->FromLlama(stack));
  set_ = engine_->InternSet(&start);
  llamaStale_ = true;
  if (engine_->failed()) return EngineError(error);
  for (size_t i = 0; i < spec.prefillTokens.size(); i++) {
    llama_token t = spec.prefillTokens[i];
    Failure f;
    if (!Accept(t, &f)) {
      *error = {kInvalid, "the grammar does not accept its prefill at token " + std::to_string(i) + " (" + std::to_string(t) + "): " + f.message};
      return false;
    }
  }
  return true;
}

GrammarState::~GrammarState() {
  if (grammar_ != nullptr) llama_grammar_free_impl(grammar_);
}

bool GrammarState::EnsureIndex(Failure* error) {
  if (mask_) return true;
  try {
    index_ = holder_->Get(vocab_);
  } catch (const std::exception& e) {
    *error = {kInvalid, std::string("could not index the vocabulary: ") + e.what()};
    return false;
  }
  auto t0 = std::chrono::steady_clock::now();
  classes_ = std::make_unique<PositionClasses>(grammar_->rules);
  stats_.classesMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  mask_ = std::make_unique<MaskEngine>(index_, engine_.get(), classes_.get(), holder_->Shared());
  return true;
}

bool GrammarState::EngineError(Failure* error) {
  *error = {kInvalid, engine_->error()};
  return false;
}

void GrammarState::SyncLlama() {
  if (!llamaStale_) return;
  grammar_->stacks.clear();
  for (const StackId* s = engine_->SetBegin(set_); s != engine_->SetEnd(set_); s++) grammar_->stacks.push_back(engine_->ToLlama(*s));
  grammar_->partial_utf8 = llama_partial_utf8{partialValue_, partialRemain_};
  llamaStale_ = false;
}

std::vector<llama_grammar_stack> GrammarState::Stacks() {
  std::vector<llama_grammar_stack> out;
  for (const StackId* s = engine_->SetBegin(set_); s != engine_->SetEnd(set_); s++) out.push_back(engine_->ToLlama(*s));
  return out;
}

llama_grammar* GrammarState::SyncedLlamaGrammar() {
  SyncLlama();
  return grammar_;
}

bool GrammarState::AdmitsByLlama(const llama_token* ids, size_t n, std::vector<uint8_t>* verdict) {
  SyncLlama();
  scratch_.resize(n);
  for (size_t i = 0; i < n; i++) scratch_[i] = llama_token_data{ids[i], 0.0f, 0.0f};
  llama_token_data_array arr{scratch_.data(), n, -1, false};
  llama_grammar_apply_impl(*grammar_, &arr);
  verdict->resize(n);
  for (size_t i = 0; i < n; i++) (*verdict)[i] = scratch_[i].logit != -INFINITY;
  return true;
}

bool GrammarState::ReferenceMask(TokenBits* out) {
  stats_.referenceMasks++;
  const int32_t n = llama_vocab_n_tokens(vocab_);
  std::vector<llama_token> all(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; i++) all[i] = i;
  std::vector<uint8_t> verdict;
  AdmitsByLlama(all.data(), all.size(), &verdict);
  out->Clear();
  for (int32_t i = 0; i < n; i++) {
    if (verdict[i]) out->Set(i);
  }
  return true;
}

bool GrammarState::Admits(llama_token token, Failure* error) {
  if (awaiting_) return true;
  if (!EnsureIndex(error)) return false;
  if (token < 0 || token >= index_->nVocab) return false;
  switch (index_->kind[token]) {
    case TokenKind::kEog:
      return engine_->HasEmpty(set_);
    case TokenKind::kRejected:
      return false;
    case TokenKind::kSlow:
      break;
    case TokenKind::kTrie: {
      if (hasTokenElements_ || (partialRemain_ > 0 && partialValue_ == 0)) break;
      const std::string& piece = PieceOf(vocab_, token);
      Utf8Walk u{partialRemain_ > 0 ? partialValue_ : 0, static_cast<int8_t>(partialRemain_ > 0 ? partialRemain_ : 0), partialRemain_ > 0};
      SetId s = set_;
      for (char c : piece) {
        if (c == 0) break;
        ByteStep step = StepByte(&u, static_cast<uint8_t>(c));
        if (step == ByteStep::kInvalid) return false;
        if (step == ByteStep::kComplete) {
          s = engine_->Next(s, u.value);
          if (s == StackEngine::kDead) {
            if (engine_->failed()) EngineError(error);
            return false;
          }
        }
      }
      return u.remain == 0 || engine_->AcceptsPartial(s, u.value, u.remain);
    }
  }
  std::vector<uint8_t> verdict;
  AdmitsByLlama(&token, 1, &verdict);
  return verdict[0] != 0;
}

bool GrammarState::Mask(TokenBits* out, bool reference, Failure* error) {
  if (!EnsureIndex(error)) return false;
  if (out->size() != index_->nVocab) out->Resize(index_->nVocab);
  if (awaiting_) {
    out->Fill();
    return true;
  }
  auto t0 = std::chrono::steady_clock::now();
  bool ok = true;
  if (reference) {
    ReferenceMask(out);
  } else {
    byId_.clear();
    Utf8Walk carried{partialRemain_ > 0 ? partialValue_ : 0, static_cast<int8_t>(partialRemain_ > 0 ? partialRemain_ : 0), false};
    MaskEngine::Result r = mask_->Compute(set_, carried, out, &byId_);
    if (r == MaskEngine::Result::kError) {
      ok = EngineError(error);
    } else if (r == MaskEngine::Result::kFallback) {
      ReferenceMask(out);
    } else {
      stats_.fullMasks++;
      const bool allowEog = engine_->HasEmpty(set_);
      for (llama_token t : index_->eog) out->Assign(t, allowEog);
      // Tokens llama.cpp decides by id: the vocabulary's slow ones and the TOKEN elements met.
      byId_.insert(byId_.end(), index_->slow.begin(), index_->slow.end());
      byId_.erase(std::remove_if(byId_.begin(), byId_.end(), [&](llama_token t) { return t < 0 || t >= index_->nVocab; }),
                  byId_.end());
      std::sort(byId_.begin(), byId_.end());
      byId_.erase(std::unique(byId_.begin(), byId_.end()), byId_.end());
      if (!byId_.empty()) {
        std::vector<uint8_t> verdict;
        AdmitsByLlama(byId_.data(), byId_.size(), &verdict);
        for (size_t i = 0; i < byId_.size(); i++) out->Assign(byId_[i], verdict[i] != 0);
      }
    }
  }
  stats_.maskMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ok;
}

bool GrammarState::Apply(llama_token_data_array* cur, bool reference, Failure* error) {
  if (awaiting_) return true;
  if (reference) {
    SyncLlama();
    stats_.referenceMasks++;
    llama_grammar_apply_impl(*grammar_, cur);
    return true;
  }
  if (cur->size <= 16) {
    for (size_t i = 0; i < cur->size; i++) {
      Failure f;
      bool ok = Admits(cur->data[i].id, &f);
      if (!f.ok()) {
        *error = f;
        return false;
      }
      if (!ok) cur->data[i].logit = -INFINITY;
    }
    return true;
  }
  if (!Mask(&applyBits_, false, error)) return false;
  for (size_t i = 0; i < cur->size; i++) {
    llama_token id = cur->data[i].id;
    if (id < 0 || id >= applyBits_.size() || !applyBits_.Test(id)) cur->data[i].logit = -INFINITY;
  }
  return true;
}

bool GrammarState::AcceptToken(llama_token token, const std::string& piece, Failure* error) {
  Decoded d = DecodeLikeLlama(piece, partialValue_, partialRemain_);
  std::vector<StackId> out;
  std::vector<StackId> chars;
  for (const StackId* p = engine_->SetBegin(set_); p != engine_->SetEnd(set_); p++) {
    StackId s = *p;
    if (s == StackEngine::kEmpty) continue;
    const Elem* top = engine_->Top(s);
    if (IsTokenTop(top)) {
      if (!MatchToken(top, token)) continue;
      StackId next = engine_->Parent(s);
      if (!IsEndOfSequence(top + 1)) next = engine_->Push(top + 1, next);
      const std::vector<StackId>* adv = engine_->Advance(next);
      if (adv == nullptr) return EngineError(error);
      out.insert(out.end(), adv->begin(), adv->end());
    } else {
      chars.push_back(s);
    }
  }
  SetId charSet = engine_->InternSet(&chars);
  for (uint32_t cp : d.codePoints) {
    if (charSet == StackEngine::kDead) break;
    charSet = engine_->Next(charSet, cp);
  }
  if (engine_->failed()) return EngineError(error);
  out.insert(out.end(), engine_->SetBegin(charSet), engine_->SetEnd(charSet));
  SetId next = engine_->InternSet(&out);
  if (engine_->failed()) return EngineError(error);
  if (next == StackEngine::kDead) {
    *error = {kDeadEnd, "the grammar cannot continue: Unexpected empty grammar stack after accepting piece: " + piece + " (" +
                            std::to_string(token) + ")"};
    return false;
  }
  set_ = next;
  partialValue_ = d.value;
  partialRemain_ = d.remain;
  llamaStale_ = true;
  MaybeReset();
  return true;
}

bool GrammarState::Accept(llama_token token, Failure* error) {
  const int32_t nVocab = llama_vocab_n_tokens(vocab_);
  if (token < 0 || token >= nVocab) {
    *error = {kDeadEnd, "token " + std::to_string(token) + " is outside the vocabulary"};
    return false;
  }
  const std::string& piece = PieceOf(vocab_, token);
  if (awaiting_) {
    if (std::find(triggerTokens_.begin(), triggerTokens_.end(), token) != triggerTokens_.end()) {
      awaiting_ = false;
      positions_.clear();
      triggers_.reset();
      return AcceptToken(token, piece, error);
    }
    const size_t at = triggers_->buffer().size();
    positions_.push_back({token, {at, at + piece.size()}});
    size_t start = 0;
    if (!triggers_->Feed(piece, &start)) return true;
    awaiting_ = false;
    // Replay the tokens that overlap the text from the trigger on (the first one cut).
    const std::string buffer = triggers_->buffer();
    auto positions = std::move(positions_);
    positions_.clear();
    triggers_.reset();
    for (const auto& [tok, span] : positions) {
      if (span.second <= start) continue;
      size_t from = std::max(span.first, start);
      if (!AcceptToken(tok, buffer.substr(from, span.second - from), error)) return false;
    }
    return true;
  }
  if (llama_vocab_is_eog(vocab_, token)) {
    if (engine_->HasEmpty(set_)) return true;
    *error = {kDeadEnd, "the grammar does not allow the end of generation here"};
    return false;
  }
  return AcceptToken(token, piece, error);
}

ptrdiff_t GrammarState::DraftPrefix(const llama_token* draft, size_t n, bool stopAtForced) {
  if (awaiting_ || n == 0) return static_cast<ptrdiff_t>(n);
  if (hasTokenElements_) return -1;
  SetId set = set_;
  uint32_t value = partialValue_;
  int remain = partialRemain_;
  std::vector<StackId> chars;
  size_t k = 0;
  for (; k < n; k++) {
    // As AcceptToken (no TOKEN elements here): the stacks that have not ended take the piece's
    // code points. A piece llama.cpp's pass rejects outright (empty, invalid UTF-8) ends the walk.
    const std::string& piece = vocab_->token_to_piece(draft[k]);
    if (piece.empty() || piece[0] == 0 || llama_vocab_is_eog(vocab_, draft[k])) break;
    Decoded d = DecodeLikeLlama(piece, value, remain);
    if (d.remain < 0) break;
    chars.clear();
    for (const StackId* p = engine_->SetBegin(set); p != engine_->SetEnd(set); p++) {
      if (*p != StackEngine::kEmpty) chars.push_back(*p);
    }
    SetId next = engine_->InternSet(&chars);
    for (uint32_t cp : d.codePoints) {
      if (next == StackEngine::kDead) break;
      next = engine_->Next(next, cp);
    }
    if (engine_->failed() || next == StackEngine::kDead) break;
    set = next;
    value = d.value;
    remain = d.remain;
    if (stopAtForced && remain == 0) {
      std::string forced;
      ForcedRun(engine_.get(), set, 4, &forced);
      if (engine_->failed()) break;
      if (!forced.empty()) return static_cast<ptrdiff_t>(k + 1);
    }
  }
  return static_cast<ptrdiff_t>(k);
}

std::string GrammarState::ForcedBytes(size_t maxBytes) {
  std::string out;
  if (awaiting_ || partialRemain_ != 0 || hasTokenElements_) return out;
  ForcedRun(engine_.get(), set_, maxBytes, &out);
  return out;
}

void GrammarState::MaybeReset() {
  if (mask_ && mask_->MemoryBytes() > kCacheBudget) {
    mask_ = std::make_unique<MaskEngine>(index_, engine_.get(), classes_.get(), holder_->Shared());
    stats_.resets++;
  }
  if (engine_->MemoryBytes() <= kEngineBudget) return;
  std::vector<llama_grammar_stack> stacks = Stacks();
  engine_ = std::make_unique<StackEngine>(&grammar_->rules);
  std::vector<StackId> ids;
  for (const auto& stack : stacks) ids.push_back(engine_->FromLlama(stack));
  set_ = engine_->InternSet(&ids);
  if (mask_) mask_->OnEngineReset(engine_.get());
  stats_.resets++;
}

bool GrammarState::Warm(size_t maxStates, Failure* error) {
  if (!EnsureIndex(error)) return false;
  if (maxStates == 0) {
    if (mask_->WarmAll(grammar_->rules, grammar_->rules[rootRule_].data()) == MaskEngine::Result::kError) return EngineError(error);
    return true;
  }
  if (awaiting_) return true;
  std::vector<SetId> queue{set_};
  std::vector<uint8_t> seen;
  auto mark = [&](SetId s) {
    if (s >= seen.size()) seen.resize(s + 1, 0);
    if (seen[s]) return false;
    seen[s] = 1;
    return true;
  };
  mark(set_);
  for (size_t i = 0; i < queue.size() && i < maxStates; i++) {
    if (mask_->Warm(queue[i]) == MaskEngine::Result::kError) return EngineError(error);
    for (uint32_t c = 0; c < engine_->classCount(); c++) {
      SetId next = engine_->Next(queue[i], engine_->ClassRep(c));
      if (engine_->failed()) return EngineError(error);
      if (next != StackEngine::kDead && mark(next)) queue.push_back(next);
    }
  }
  return true;
}

}  // namespace lp::grammar
