#include "mask.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace lp::grammar {

size_t MaskEngine::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.n);
  for (int i = 0; i < k.n; i++) h = Mix64(h ^ k.classes[i]);
  return static_cast<size_t>(h);
}

MaskEngine::MaskEngine(std::shared_ptr<const VocabIndex> vocab, StackEngine* engine, const PositionClasses* positions)
    : vocab_(std::move(vocab)), engine_(engine), positions_(positions) {
  frames_.resize(static_cast<size_t>(vocab_->maxDepth) + 2);
  scratch_.Resize(vocab_->nVocab);
}

void MaskEngine::OnEngineReset(StackEngine* engine) { engine_ = engine; }

void MaskEngine::NoteTokenTops(SetId set, TokenTops* tops) {
  for (const StackId* s = engine_->SetBegin(set); s != engine_->SetEnd(set); s++) {
    if (*s == StackEngine::kEmpty || *s == StackEngine::kBottom) continue;
    const Elem* top = engine_->Top(*s);
    if (top->type == LLAMA_GRETYPE_TOKEN) tops->ids.push_back(static_cast<llama_token>(top->value));
    if (top->type == LLAMA_GRETYPE_TOKEN_NOT) tops->tokenNot = true;
  }
}

bool MaskEngine::Walk(uint32_t root, SetId set, Utf8Walk utf8, TokenBits* out, std::vector<uint32_t>* bottoms,
                      TokenTops* tops, uint64_t* visited) {
  const VocabIndex& v = *vocab_;
  const uint8_t* byte = v.byte.data();
  const uint16_t* depth = v.depth.data();
  const uint32_t* next = v.next.data();
  const uint32_t* tokenStart = v.tokenStart.data();
  const llama_token* tokens = v.tokens.data();
  const uint32_t end = next[root];
  const uint32_t base = depth[root];
  WalkFrame* frames = frames_.data();
  frames[0] = WalkFrame{set, utf8};
  if (utf8.remain == 0 && engine_->HasTokenTop(set)) NoteTokenTops(set, tops);
  // A context that itself reaches the bottom (deriving a deeper entry) continues at the root too.
  if (utf8.remain == 0 && bottoms != nullptr && engine_->HasBottom(set) && end > root + 1) bottoms->push_back(root);
  uint64_t count = 0;
  for (uint32_t i = root + 1; i < end;) {
    count++;
    uint32_t d = depth[i] - base;
    WalkFrame f = frames[d - 1];
    ByteStep step = StepByte(&f.utf8, byte[i]);
    if (step == ByteStep::kInvalid) {
      i = next[i];
      continue;
    }
    if (step == ByteStep::kComplete) {
      f.set = engine_->Next(f.set, f.utf8.value);
      if (f.set == StackEngine::kDead) {
        if (engine_->failed()) return false;
        i = next[i];
        continue;
      }
      for (uint32_t t = tokenStart[i]; t < tokenStart[i + 1]; t++) out->Set(tokens[t]);
      if (engine_->HasBottom(f.set) && bottoms != nullptr && next[i] > i + 1) bottoms->push_back(i);
      if (engine_->HasTokenTop(f.set)) NoteTokenTops(f.set, tops);
    } else {
      // Inside a character: drop the subtree when no range of the set reaches that far (then
      // llama.cpp's partial check rejects the tokens ending here too).
      if (!engine_->MayComplete(f.set, f.utf8.value, f.utf8.remain)) {
        i = next[i];
        continue;
      }
      if (tokenStart[i] != tokenStart[i + 1] && engine_->AcceptsPartial(f.set, f.utf8.value, f.utf8.remain)) {
        for (uint32_t t = tokenStart[i]; t < tokenStart[i + 1]; t++) out->Set(tokens[t]);
      }
    }
    if (!engine_->CanStep(f.set)) {
      i = next[i];
      continue;
    }
    frames[d] = f;
    i++;
  }
  *visited += count;
  return true;
}

MaskEngine::Entry* MaskEngine::Build(const Key& key) {
  auto t0 = std::chrono::steady_clock::now();
  auto entry = std::make_unique<Entry>();
  StackId local = StackEngine::kBottom;
  for (int i = key.n - 1; i >= 0; i--) local = engine_->Push(key.frames[i], local);
  std::vector<StackId> start{local};
  SetId set = engine_->InternSet(&start);
  if (set == StackEngine::kDead) return nullptr;
  scratch_.Clear();
  TokenTops tops;
  uint64_t visited = 0;
  if (!Walk(0, set, Utf8Walk{}, &scratch_, &entry->continuations, &tops, &visited)) return nullptr;
  return Store(key, std::move(entry), tops, visited, t0);
}

MaskEngine::Entry* MaskEngine::Derive(const Entry& parent, const Key& key) {
  auto t0 = std::chrono::steady_clock::now();
  auto entry = std::make_unique<Entry>();
  scratch_.Clear();
  if (!parent.bits.empty()) {
    scratch_.Or(parent.bits);
  } else {
    for (llama_token t : parent.accepted) scratch_.Set(t);
  }
  TokenTops tops;
  tops.ids = parent.byId;
  tops.tokenNot = parent.tokenNot;
  uint64_t visited = 0;
  const std::vector<StackId>* adv = engine_->Advance(engine_->Push(key.frames[key.n - 1], StackEngine::kBottom));
  if (adv == nullptr) return nullptr;
  std::vector<StackId> context(*adv);
  SetId set = engine_->InternSet(&context);
  if (engine_->failed()) return nullptr;
  if (set != StackEngine::kDead) {
    for (uint32_t node : parent.continuations) {
      if (!Walk(node, set, Utf8Walk{}, &scratch_, &entry->continuations, &tops, &visited)) return nullptr;
    }
  }
  return Store(key, std::move(entry), tops, visited, t0);
}

MaskEngine::Entry* MaskEngine::Store(const Key& key, std::unique_ptr<Entry> entry, const TokenTops& topsIn, uint64_t visited,
                                     std::chrono::steady_clock::time_point t0) {
  int32_t count = scratch_.Count();
  if (static_cast<int64_t>(count) * 32 > vocab_->nVocab) {
    entry->bits = scratch_.words();
  } else {
    entry->accepted.reserve(static_cast<size_t>(count));
    const auto& words = scratch_.words();
    for (size_t w = 0; w < words.size(); w++) {
      for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
        entry->accepted.push_back(static_cast<llama_token>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      }
    }
  }
  std::vector<llama_token> ids = topsIn.ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  entry->byId = std::move(ids);
  entry->tokenNot = topsIn.tokenNot;
  std::sort(entry->continuations.begin(), entry->continuations.end());
  entry->continuations.erase(std::unique(entry->continuations.begin(), entry->continuations.end()), entry->continuations.end());
  entry->deeper = entry->continuations.size() > kDeepenAt && key.n < kMaxKeyFrames;
  entryBytes_ += sizeof(Entry) + entry->accepted.capacity() * sizeof(llama_token) + entry->bits.capacity() * 8 +
                 entry->continuations.capacity() * 4 + entry->byId.capacity() * 4 + sizeof(Key) + 32;
  stats_.entries++;
  stats_.entryNodes += visited;

  stats_.entryMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  Entry* raw = entry.get();
  entries_.emplace(key, std::move(entry));
  return raw;
}

const MaskEngine::Entry* MaskEngine::EntryFor(StackId s, StackId* below) {
  const uint32_t depth = engine_->Depth(s);
  Key key;
  key.n = static_cast<int>(std::min<uint32_t>(depth, kFirstKeyFrames));
  StackId at = s;
  for (int i = 0; i < key.n; i++) {
    key.frames[i] = engine_->Top(at);
    key.classes[i] = positions_->Of(key.frames[i]);
    at = engine_->Parent(at);
  }
  auto it = entries_.find(key);
  const Entry* e = it != entries_.end() ? it->second.get() : Build(key);
  if (e == nullptr) return nullptr;
  // A position that keeps reaching its context is looked up with one more frame of it.
  while (e->deeper && at != StackEngine::kEmpty && key.n < kMaxKeyFrames) {
    key.frames[key.n] = engine_->Top(at);
    key.classes[key.n] = positions_->Of(key.frames[key.n]);
    key.n++;
    at = engine_->Parent(at);
    it = entries_.find(key);
    const Entry* parent = e;
    e = it != entries_.end() ? it->second.get() : Derive(*parent, key);
    if (e == nullptr) return nullptr;
  }
  *below = at;
  return e;
}

MaskEngine::Result MaskEngine::Compute(SetId set, Utf8Walk carried, TokenBits* out, std::vector<llama_token>* byId) {
  stats_.masks++;
  out->Clear();
  if (set == StackEngine::kDead) return Result::kOk;
  TokenTops tops;
  uint64_t visited = 0;
  if (carried.remain > 0) {
    // Inside a character: only tokens that go on with continuation bytes can pass, a few
    // subtrees of the root; the cache (which starts at a character boundary) does not apply.
    if (carried.value == 0) return Result::kFallback;
    carried.validate = true;
    if (!Walk(0, set, carried, out, nullptr, &tops, &visited)) return Result::kError;
  } else {
    std::vector<StackId> stacks(engine_->SetBegin(set), engine_->SetEnd(set));
    for (StackId s : stacks) {
      if (s == StackEngine::kEmpty) continue;
      const Elem* top = engine_->Top(s);
      if (top->type == LLAMA_GRETYPE_TOKEN) {
        tops.ids.push_back(static_cast<llama_token>(top->value));
        continue;
      }
      if (top->type == LLAMA_GRETYPE_TOKEN_NOT) return Result::kFallback;
      StackId below = StackEngine::kEmpty;
      const Entry* e = EntryFor(s, &below);
      if (e == nullptr) return Result::kError;
      if (e->tokenNot) return Result::kFallback;
      if (!e->bits.empty()) {
        out->Or(e->bits);
      } else {
        for (llama_token t : e->accepted) out->Set(t);
      }
      tops.ids.insert(tops.ids.end(), e->byId.begin(), e->byId.end());
      if (below == StackEngine::kEmpty || e->continuations.empty()) continue;
      const std::vector<StackId>* adv = engine_->Advance(below);
      if (adv == nullptr) return Result::kError;
      std::vector<StackId> context(*adv);
      SetId contextSet = engine_->InternSet(&context);
      if (engine_->failed()) return Result::kError;
      if (contextSet == StackEngine::kDead) continue;
      for (uint32_t node : e->continuations) {
        stats_.continuations++;
        if (!Walk(node, contextSet, Utf8Walk{}, out, nullptr, &tops, &visited)) return Result::kError;
      }
    }
  }
  if (tops.tokenNot) return Result::kFallback;
  byId->insert(byId->end(), tops.ids.begin(), tops.ids.end());
  stats_.runtimeNodes += visited;
  return Result::kOk;
}

MaskEngine::Result MaskEngine::Warm(SetId set) {
  std::vector<StackId> stacks(engine_->SetBegin(set), engine_->SetEnd(set));
  for (StackId s : stacks) {
    if (s == StackEngine::kEmpty || IsTokenTop(engine_->Top(s))) continue;
    StackId below;
    if (EntryFor(s, &below) == nullptr) return Result::kError;
  }
  return Result::kOk;
}

}  // namespace lp::grammar
