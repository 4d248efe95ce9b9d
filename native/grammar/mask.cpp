#include "mask.h"

#include <algorithm>
#include <set>
#include <chrono>
#include <functional>
#include <queue>

namespace lp::grammar {

size_t MaskEngine::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.n);
  for (int i = 0; i < k.n; i++) h = Mix64(h ^ k.classes[i]);
  return static_cast<size_t>(h);
}

size_t MaskEngine::MemoKeyHash::operator()(const std::pair<const Entry*, SetId>& k) const {
  return static_cast<size_t>(Mix64(reinterpret_cast<uintptr_t>(k.first) ^ (static_cast<uint64_t>(k.second) << 1)));
}

MaskEngine::MaskEngine(std::shared_ptr<const VocabIndex> vocab, StackEngine* engine, const PositionClasses* positions,
                       std::shared_ptr<SharedEntries> shared)
    : vocab_(std::move(vocab)), engine_(engine), positions_(positions), shared_(std::move(shared)) {
  frames_.resize(static_cast<size_t>(vocab_->maxDepth) + 2);
  scratch_.Resize(vocab_->nVocab);
}

void MaskEngine::OnEngineReset(StackEngine* engine) {
  engine_ = engine;
  uniform_.clear();
  uniformKnown_.clear();
  memo_.clear();
  memoBytes_ = 0;
}

const MaskEngine::Uniform& MaskEngine::UniformOf(SetId set) {
  if (set >= uniformKnown_.size()) {
    uniformKnown_.resize(set + 1, 0);
    uniform_.resize(set + 1);
  }
  if (!uniformKnown_[set]) {
    Uniform u;
    std::array<SetId, 128> to{};
    for (uint32_t c = 1; c < 128 && !engine_->failed(); c++) to[c] = engine_->Next(set, c);
    // The successor most ASCII characters lead to (itself where the set loops).
    std::unordered_map<SetId, uint32_t> votes;
    uint32_t best = 0;
    for (uint32_t c = 1; c < 128 && !engine_->failed(); c++) {
      if (to[c] == StackEngine::kDead) continue;
      const uint32_t n = ++votes[to[c]];
      if (n > best || (n == best && to[c] == set)) {
        best = n;
        u.to = to[c];
      }
    }
    if (u.to != StackEngine::kDead) {
      for (uint32_t c = 1; c < 128; c++) {
        if (to[c] != u.to) continue;
        if (c < 64) u.chars.lo |= 1ULL << c;
        else u.chars.hi |= 1ULL << (c - 64);
      }
      // Code points >= 0x80: the engine's classes from the one holding 0x80 to the last (the
      // whole class steps alike); past 64 classes it is not worth finding out.
      const uint32_t first = engine_->ClassOfCodePoint(0x80), last = engine_->classCount() - 1;
      bool wide = !engine_->failed() && last - first < 64;
      for (uint32_t k = first; wide && k <= last; k++) {
        wide = engine_->Next(set, std::max<uint32_t>(engine_->ClassRep(k), 0x80)) == u.to && !engine_->failed();
      }
      if (wide) u.chars.lo |= 1;
    }
    for (const StackId* st = engine_->SetBegin(set); st != engine_->SetEnd(set) && !u.partial; st++) {
      if (*st == StackEngine::kEmpty || *st == StackEngine::kBottom) continue;
      const Elem* e = engine_->Top(*st);
      if (e->type != LLAMA_GRETYPE_CHAR_NOT) continue;
      bool asciiOnly = true;
      do {
        const uint32_t hi = e[1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER ? e[1].value : e->value;
        if (hi >= 0x80) asciiOnly = false;
        e += e[1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER ? 2 : 1;
      } while (e->type == LLAMA_GRETYPE_CHAR_ALT);
      u.partial = asciiOnly;
    }
    if (engine_->failed()) u = Uniform{};
    uniform_[set] = u;
    uniformKnown_[set] = 1;
  }
  return uniform_[set];
}

void MaskEngine::NoteTokenTops(SetId set, TokenTops* tops) {
  for (const StackId* s = engine_->SetBegin(set); s != engine_->SetEnd(set); s++) {
    if (*s == StackEngine::kEmpty || *s == StackEngine::kBottom) continue;
    const Elem* top = engine_->Top(*s);
    if (top->type == LLAMA_GRETYPE_TOKEN) tops->ids.push_back(static_cast<llama_token>(top->value));
    if (top->type == LLAMA_GRETYPE_TOKEN_NOT) tops->tokenNot = true;
  }
}

bool MaskEngine::Walk(uint32_t root, SetId set, Utf8Walk utf8, TokenBits* out, std::vector<uint32_t>* bottoms,
                      TokenTops* tops, uint64_t* visited, std::vector<llama_token>* list) {
  const VocabIndex& v = *vocab_;
  const uint8_t* byte = v.byte.data();
  const uint16_t* depth = v.depth.data();
  const uint32_t* next = v.next.data();
  const uint32_t* tokenStart = v.tokenStart.data();
  const llama_token* tokens = v.tokens.data();
  uint64_t* words = out->words().data();
  const uint32_t end = next[root];
  const uint32_t base = depth[root];
  WalkFrame* frames = frames_.data();
  frames[0] = WalkFrame{set, utf8};
  if (utf8.remain == 0 && engine_->HasTokenTop(set)) NoteTokenTops(set, tops);
  // A context that itself reaches the bottom (deriving a deeper entry) continues at the root too.
  if (utf8.remain == 0 && bottoms != nullptr && engine_->HasBottom(set) && end > root + 1) bottoms->push_back(root);
  StackEngine::View view = engine_->view();
  auto mark = [&](uint32_t i) {
    if (list != nullptr) {
      list->insert(list->end(), tokens + tokenStart[i], tokens + tokenStart[i + 1]);
      return;
    }
    for (uint32_t t = tokenStart[i]; t < tokenStart[i + 1]; t++) words[static_cast<uint32_t>(tokens[t]) >> 6] |= 1ULL << (tokens[t] & 63);
  };
  uint64_t count = 0;
  // (VocabIndex's per-node facts assume the walk starts at a character boundary, not inside a
  // character carried from the last token)
  const bool aligned = utf8.remain == 0;
  for (uint32_t i = root + 1; i < end;) {
    count++;
    const uint32_t d = depth[i] - base;
    WalkFrame f = frames[d - 1];
    const uint8_t b = byte[i];
    bool complete;
    if (f.utf8.remain == 0 && b < 0x80) {
      f.utf8.value = b;  // the common case: an ASCII character at a boundary
      complete = true;
    } else {
      ByteStep step = StepByte(&f.utf8, b);
      if (step == ByteStep::kInvalid) {
        i = next[i];
        continue;
      }
      complete = step == ByteStep::kComplete;
    }
    if (complete) {
      const uint32_t cls = f.utf8.value < 128 ? view.asciiClass[f.utf8.value] : engine_->ClassOfCodePoint(f.utf8.value);
      const StackEngine::SetInfo& from = view.sets[f.set];
      const int32_t known = (cls < view.rowWidth && from.row != 0) ? view.rows[from.row - 1 + cls] : -1;
      if (known >= 0) {
        f.set = static_cast<SetId>(known);
      } else {
        f.set = engine_->Next(f.set, f.utf8.value);
        view = engine_->view();
      }
      if (f.set == StackEngine::kDead) {
        if (engine_->failed()) return false;
        i = next[i];
        continue;
      }
      const uint8_t flags = view.sets[f.set].flags;
      mark(i);
      if (flags & (StackEngine::kFlagBottom | StackEngine::kFlagToken)) {
        if ((flags & StackEngine::kFlagBottom) && bottoms != nullptr && next[i] > i + 1) {
          bottoms->push_back(i);
          if (bottomBudget_ != 0 && bottoms->size() > bottomBudget_) {
            walkStopped_ = true;
            *visited += count;
            return true;
          }
        }
        if (flags & StackEngine::kFlagToken) NoteTokenTops(f.set, tops);
      }
      if (!(flags & StackEngine::kFlagCanStep)) {
        i = next[i];
        continue;
      }
      // A state that steps to itself (inside a string, a run of digits or blanks), or through a
      // chain of states on the same characters (a string of bounded length: one state per
      // character written): where every character below this node is one the chain takes, for
      // as many steps as the subtree is deep, each token below is admitted, so the subtree is
      // set at once without walking it (most of a string position's walk). Characters past ASCII
      // count where every one of them takes the same step and the bytes below are plain UTF-8
      // (VocabIndex::belowOdd; a token cut inside a character only where the set passes every
      // such partial character). Not where a subtree's nodes would be noted as
      // continuations or TOKEN ids. Tried where the state loops, where its step is known, and
      // below nodes with large subtrees (finding a set's step costs 127 transitions).
      if (aligned && next[i] > i + 1 && !(v.belowOdd[i] & VocabIndex::kOddBytes) && !((flags & StackEngine::kFlagBottom) && bottoms != nullptr) &&
          (f.set == frames[d - 1].set || next[i] - i > 32 || (f.set < uniformKnown_.size() && uniformKnown_[f.set]))) {
        const VocabIndex::Bytes& below = v.below[i];
        const uint32_t height = v.height[i];
        SetId s = f.set;
        bool all = true;
        for (uint32_t k = 0; k < height; k++) {
          const Uniform& u = UniformOf(s);
          if (engine_->failed()) return false;
          if ((below.lo & ~u.chars.lo) != 0 || (below.hi & ~u.chars.hi) != 0 || ((v.belowOdd[i] & VocabIndex::kOddPartial) && !u.partial)) {
            all = false;
            break;
          }
          if (u.to == s) break;  // a loop: the same from here down
          view = engine_->view();
          const uint8_t next_flags = view.sets[u.to].flags;
          if ((next_flags & StackEngine::kFlagToken) || ((next_flags & StackEngine::kFlagBottom) && bottoms != nullptr)) {
            all = false;
            break;
          }
          s = u.to;
        }
        view = engine_->view();
        if (all) {
          if (list != nullptr) {
            list->insert(list->end(), tokens + tokenStart[i + 1], tokens + tokenStart[next[i]]);
          } else {
            for (uint32_t t = tokenStart[i + 1]; t < tokenStart[next[i]]; t++) words[static_cast<uint32_t>(tokens[t]) >> 6] |= 1ULL << (tokens[t] & 63);
          }
          i = next[i];
          continue;
        }
      }
    } else {
      // Inside a character: drop the subtree when no range of the set reaches that far (then
      // llama.cpp's partial check rejects the tokens ending here too).
      if (!engine_->MayComplete(f.set, f.utf8.value, f.utf8.remain)) {
        i = next[i];
        continue;
      }
      if (tokenStart[i] != tokenStart[i + 1]) {
        if (engine_->AcceptsPartial(f.set, f.utf8.value, f.utf8.remain)) mark(i);
        view = engine_->view();
      }
    }
    frames[d] = f;
    i++;
  }
  *visited += count;
  return true;
}

const MaskEngine::Entry* MaskEngine::Build(const Key& key, bool allowStub) {
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
  walkStopped_ = false;
  bottomBudget_ = allowStub && key.n < kMaxKeyFrames ? kDeepenAt : 0;
  const bool ok = Walk(0, set, Utf8Walk{}, &scratch_, &entry->continuations, &tops, &visited);
  bottomBudget_ = 0;
  if (!ok) return nullptr;
  if (walkStopped_) {
    auto stub = std::make_unique<Entry>();
    stub->deeper = stub->stub = true;
    stats_.entryNodes += visited;
    stats_.stubs++;
    if (key.n == 1) stats_.shallowNodes += visited;
    const Entry* raw = stub.get();
    entries_[key] = std::move(stub);
    return raw;
  }
  return Store(key, std::move(entry), tops, visited, t0);
}

const MaskEngine::Entry* MaskEngine::Derive(const Entry& parent, const Key& key) {
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

const MaskEngine::Entry* MaskEngine::Store(const Key& key, std::unique_ptr<Entry> entry, const TokenTops& topsIn, uint64_t visited,
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
  if (key.n == 1) {
    stats_.shallowEntries++;
    stats_.shallowNodes += visited;
  }


  stats_.entryMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const Entry* raw = entry.get();
  entries_[key] = std::move(entry);  // replaces a stub the key had
  return raw;
}

void MaskEngine::ComputeMinLengths() {
  // The fewest characters each rule derives, by rounds from "unknown" down: values above the true
  // minimum until the rounds settle, so where they do not settle every rule counts 0 (always a
  // safe lower bound: nothing is then left out of a key).
  const llama_grammar_rules& rules = engine_->rules();
  constexpr uint32_t kInf = UINT32_MAX / 4;
  minLen_.assign(rules.size(), kInf);
  bool settled = false;
  for (int round = 0; round < kMinLengthRounds && !settled; round++) {
    settled = true;
    for (size_t r = 0; r < rules.size(); r++) {
      uint32_t best = kInf, cur = 0;
      for (const Elem& e : rules[r]) {
        if (e.type == LLAMA_GRETYPE_END || e.type == LLAMA_GRETYPE_ALT) {
          best = std::min(best, cur);
          cur = 0;
          continue;
        }
        cur = std::min(kInf, cur + ElementCost(e));
      }
      if (best < minLen_[r]) {
        minLen_[r] = best;
        settled = false;
      }
    }
  }
  if (!settled) std::fill(minLen_.begin(), minLen_.end(), 0u);
}

uint32_t MaskEngine::ElementCost(const Elem& e) const {
  switch (e.type) {
    case LLAMA_GRETYPE_CHAR:
    case LLAMA_GRETYPE_CHAR_NOT:
    case LLAMA_GRETYPE_CHAR_ANY:
      return 1;  // (its CHAR_ALT / RNG_UPPER parts are the same character)
    case LLAMA_GRETYPE_RULE_REF:
      return e.value < minLen_.size() ? minLen_[e.value] : 0;
    default:
      return 0;  // TOKEN elements and the rest: counted as nothing (a lower bound)
  }
}

bool MaskEngine::SharedKey(const Key& key, int canonicalFrames, std::string* out, bool* local) {
  // What a walk can see: at most the longest piece's bytes, so at most that many characters. A
  // rule entered only after more characters than that (every path to it reads them) cannot change
  // the entry, and is written as "beyond" in place of its number: the positions of a long counted
  // repetition (`char{0,1998}`, one rule per count) then share a key wherever more than that is
  // left. Distances are lower bounds (each rule's fewest characters), and rules are written in the
  // order of their distance, so each one's is final when it is written.
  if (!minLenKnown_) {
    ComputeMinLengths();
    minLenKnown_ = true;
  }
  const llama_grammar_rules& rules = engine_->rules();
  const uint32_t horizon = static_cast<uint32_t>(vocab_->maxDepth) + 2;
  constexpr uint32_t kBeyond = 0xFFFFFFFFu;
  out->clear();
  sharedRuleIds_.clear();
  sharedRules_.clear();
  sharedRuleDist_.clear();
  // (distance, canonical number) of rules to write, nearest first
  std::priority_queue<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>, std::greater<>> pending;
  size_t budget = SharedEntries::kMaxKeyElements;
  auto put = [&](uint32_t x) { out->append(reinterpret_cast<const char*>(&x), sizeof x); };
  auto emit = [&](const Elem& e, uint32_t at) {
    if (budget-- == 0) return false;
    put(static_cast<uint32_t>(e.type));
    if (e.type != LLAMA_GRETYPE_RULE_REF) {
      put(e.value);
      return true;
    }
    if (at > horizon || e.value >= rules.size()) {
      put(kBeyond);
      return true;
    }
    auto [it, fresh] = sharedRuleIds_.emplace(e.value, static_cast<uint32_t>(sharedRules_.size()));
    if (fresh) {
      sharedRules_.push_back(e.value);
      sharedRuleDist_.push_back(at);
      pending.push({at, it->second});
    } else if (at < sharedRuleDist_[it->second]) {
      sharedRuleDist_[it->second] = at;
      pending.push({at, it->second});
    }
    put(it->second);
    return true;
  };
  put(static_cast<uint32_t>(key.n));
  // each frame: the rest of its alternative (where it ends, END or ALT alike); a frame reached
  // only past the horizon is written as "beyond", and so are the ones under it. Frames from
  // `canonicalFrames` on are written as their addresses: a key for this grammar only.
  uint32_t at = 0;
  *local = false;
  for (int i = 0; i < key.n; i++) {
    if (at > horizon) {
      put(kBeyond);
      break;
    }
    if (i >= canonicalFrames) {
      const uint64_t address = reinterpret_cast<uintptr_t>(key.frames[i]);
      put(kBeyond - 2);
      put(static_cast<uint32_t>(address));
      put(static_cast<uint32_t>(address >> 32));
      *local = true;
      continue;  // (its distance no longer matters: the frames under it are addresses too)
    }
    for (const Elem* p = key.frames[i]; !IsEndOfSequence(p); p++) {
      if (!emit(*p, at)) return false;
      at = std::min(kBeyond / 2, at + ElementCost(*p));
    }
    put(LLAMA_GRETYPE_END);
  }
  // then every rule reached within the horizon, whole, nearest first
  std::vector<uint8_t> written(0);
  while (!pending.empty()) {
    const auto [dist, id] = pending.top();
    pending.pop();
    if (id < written.size() && written[id]) continue;
    if (dist != sharedRuleDist_[id]) continue;  // a nearer entry of it is queued
    if (written.size() <= id) written.resize(sharedRules_.size(), 0);
    written[id] = 1;
    put(kBeyond - 1);  // a rule's start, and its number
    put(id);
    uint32_t d = dist;
    for (const Elem& e : rules[sharedRules_[id]]) {
      if (e.type == LLAMA_GRETYPE_END || e.type == LLAMA_GRETYPE_ALT) {
        put(static_cast<uint32_t>(e.type));
        d = dist;
        continue;
      }
      if (!emit(e, d)) return false;
      d = std::min(kBeyond / 2, d + ElementCost(e));
    }
  }
  return true;
}

const MaskEngine::Entry* MaskEngine::Obtain(const Key& key, const Entry* parent, bool allowStub) {
  // The key written out whole where it fits (shared with every grammar of the model), else its
  // top frames written out and the rest by address (shared within this grammar: a long counted
  // repetition's positions above the same object member). Frames are added one at a time until
  // the text no longer fits; the texts only grow with more frames.
  std::string canonical, attempt;
  bool local = false;
  for (int k = 1; k <= key.n; k++) {
    bool attemptLocal = false;
    if (!SharedKey(key, k, &attempt, &attemptLocal)) break;
    canonical.swap(attempt);
    local = attemptLocal;
    if (!local) break;  // all written out (or the rest lies past the horizon)
  }
  // without a model's table, whole keys are kept within this grammar too
  if (shared_ == nullptr) local = true;
  const bool share = !canonical.empty();
  if (share) {
    std::shared_ptr<const Entry> found;
    if (local) {
      auto it = local_.find(canonical);
      if (it != local_.end()) found = it->second;
    } else {
      found = shared_->Find(canonical);
    }
    if (found != nullptr && (!found->stub || allowStub)) {
      (local ? stats_.localHits : stats_.sharedHits)++;
      entryBytes_ += sizeof(Key) + 64;
      const Entry* raw = found.get();
      entries_[key] = std::move(found);
      return raw;
    }
  }
  const Entry* e = parent == nullptr || parent->stub ? Build(key, allowStub) : Derive(*parent, key);
  if (e != nullptr && share) {
    if (local) {
      entryBytes_ += canonical.size() + 64;
      local_[canonical] = entries_.at(key);
    } else {
      shared_->Put(canonical, entries_.at(key));
    }
  }
  return e;
}

const MaskEngine::Entry* MaskEngine::EntryFor(StackId s, StackId* below, bool keepStubs) {
  const uint32_t depth = engine_->Depth(s);
  Key key;
  key.n = static_cast<int>(std::min<uint32_t>(depth, kFirstKeyFrames));
  StackId at = s;
  for (int i = 0; i < key.n; i++) {
    key.frames[i] = engine_->Top(at);
    key.classes[i] = positions_->Of(key.frames[i]);
    at = engine_->Parent(at);
  }
  auto canDeepen = [&]() { return (keepStubs || at != StackEngine::kEmpty) && key.n < kMaxKeyFrames; };
  auto it = entries_.find(key);
  const Entry* e = it != entries_.end() ? it->second.get() : Obtain(key, nullptr, canDeepen());
  if (e == nullptr) return nullptr;
  // A position that keeps reaching its context is looked up with one more frame of it.
  while (e->deeper && at != StackEngine::kEmpty && key.n < kMaxKeyFrames) {
    key.frames[key.n] = engine_->Top(at);
    key.classes[key.n] = positions_->Of(key.frames[key.n]);
    key.n++;
    at = engine_->Parent(at);
    it = entries_.find(key);
    const Entry* parent = e;
    e = it != entries_.end() ? it->second.get() : Obtain(key, parent, canDeepen());
    if (e == nullptr) return nullptr;
  }
  // A stub where the stack ends: this key is needed whole after all.
  if (e->stub && !keepStubs) e = Obtain(key, nullptr, false);
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
    // Stacks of one set often share an entry (positions of one class, one shared piece) and
    // sometimes its context too: each is added to the mask once.
    applied_.clear();
    auto firstTime = [&](const Entry* e, SetId context) {
      const std::pair<const Entry*, SetId> k{e, context};
      if (std::find(applied_.begin(), applied_.end(), k) != applied_.end()) return false;
      applied_.push_back(k);
      return true;
    };
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
      // (applied_ is scanned linearly: past a few dozen distinct pairs the duplicates are added again)
      if (applied_.size() > kMaxApplied || firstTime(e, StackEngine::kDead)) {
        if (!e->bits.empty()) {
          out->Or(e->bits);
        } else {
          for (llama_token t : e->accepted) out->Set(t);
        }
        tops.ids.insert(tops.ids.end(), e->byId.begin(), e->byId.end());
      }
      if (below == StackEngine::kEmpty || e->continuations.empty()) continue;
      const std::vector<StackId>* adv = engine_->Advance(below);
      if (adv == nullptr) return Result::kError;
      std::vector<StackId> context(*adv);
      SetId contextSet = engine_->InternSet(&context);
      if (engine_->failed()) return Result::kError;
      if (contextSet == StackEngine::kDead) continue;
      if (applied_.size() <= kMaxApplied && !firstTime(e, contextSet)) continue;
      if (e->continuations.size() < kMemoContinuations) {
        for (uint32_t node : e->continuations) {
          stats_.continuations++;
          if (!Walk(node, contextSet, Utf8Walk{}, out, nullptr, &tops, &visited)) return Result::kError;
        }
        continue;
      }
      const std::pair<const Entry*, SetId> memoKey{e, contextSet};
      auto hit = memo_.find(memoKey);
      if (hit == memo_.end() || !hit->second.kept) {
        if (hit == memo_.end()) {
          // The first visit walks into the mask as usual (keeping costs more than walking, and
          // most pairs come once); the second keeps what the walks admit.
          if (memoBytes_ + sizeof(Walked) + 64 > kMemoBudget) {
            memo_.clear();
            memoBytes_ = 0;
          }
          memo_.emplace(memoKey, Walked{});
          memoBytes_ += sizeof(Walked) + 64;
          for (uint32_t node : e->continuations) {
            stats_.continuations++;
            if (!Walk(node, contextSet, Utf8Walk{}, out, nullptr, &tops, &visited)) return Result::kError;
          }
          continue;
        }
        // the walks alone, their tokens listed, then kept
        Walked w;
        w.kept = true;
        TokenTops own;
        for (uint32_t node : e->continuations) {
          stats_.continuations++;
          if (!Walk(node, contextSet, Utf8Walk{}, out, nullptr, &own, &visited, &w.accepted)) return Result::kError;
        }
        w.byId = std::move(own.ids);
        w.tokenNot = own.tokenNot;
        if (w.accepted.size() > static_cast<size_t>(vocab_->nVocab) / 64) {
          // setting them one by one at every visit cost more than the walks saved
          w.bits.assign((static_cast<size_t>(vocab_->nVocab) + 63) / 64, 0);
          for (llama_token t : w.accepted) w.bits[static_cast<size_t>(t) >> 6] |= 1ULL << (t & 63);
          std::vector<llama_token>().swap(w.accepted);
        }
        const size_t bytes = sizeof(Walked) + 64 + (w.accepted.size() + w.byId.size()) * sizeof(llama_token) + w.bits.size() * sizeof(uint64_t);
        if (memoBytes_ + bytes > kMemoBudget) {
          memo_.clear();
          memoBytes_ = 0;
          hit = memo_.end();
        }
        memoBytes_ += bytes;
        hit = memo_.insert_or_assign(memoKey, std::move(w)).first;
      } else {
        stats_.memoHits++;
      }
      if (!hit->second.bits.empty()) {
        out->Or(hit->second.bits);
      } else {
        for (llama_token t : hit->second.accepted) out->Set(t);
      }
      tops.ids.insert(tops.ids.end(), hit->second.byId.begin(), hit->second.byId.end());
      tops.tokenNot |= hit->second.tokenNot;
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

namespace lp::grammar {

MaskEngine::Result MaskEngine::WarmAll(const llama_grammar_rules& rules, const Elem* root) {
  // below[r]: the frames that can lie directly under a frame of rule r (nullptr: the empty stack),
  // from every reference to r: the element after it, or (when it ends its sequence) whatever lies
  // under the referencing rule.
  const size_t n = rules.size();
  std::vector<std::set<const Elem*>> below(n);
  for (size_t r = 0; r < n; r++) {
    if (!rules[r].empty() && rules[r].data() == root) below[r].insert(nullptr);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < n; s++) {
      for (const Elem& e : rules[s]) {
        if (e.type != LLAMA_GRETYPE_RULE_REF || e.value >= n) continue;
        auto& into = below[e.value];
        size_t size = into.size();
        if (!IsEndOfSequence(&e + 1)) {
          into.insert(&e + 1);
        } else {
          into.insert(below[s].begin(), below[s].end());
        }
        changed |= into.size() != size;
      }
    }
  }
  std::vector<std::pair<const Elem*, size_t>> bases;
  for (size_t r = 0; r < n; r++) {
    if (!rules[r].empty()) bases.push_back({rules[r].data(), r});
  }
  std::sort(bases.begin(), bases.end());
  auto ruleOf = [&](const Elem* p) -> size_t {
    auto it = std::upper_bound(bases.begin(), bases.end(), std::make_pair(p, SIZE_MAX));
    if (it == bases.begin()) return n;
    --it;
    return p < it->first + rules[it->second].size() ? it->second : n;
  };
  std::vector<size_t> ruleOfFrame;
  // Depth-first over chains top, below, below that...: a chain is extended only while its
  // entry asks for a deeper key.
  std::vector<const Elem*> chain;
  std::function<Result(size_t)> extend = [&](size_t rule) -> Result {
    StackId s = StackEngine::kEmpty;
    for (size_t i = chain.size(); i > 0; i--) s = engine_->Push(chain[i - 1], s);
    StackId at;
    // The chain may end here (nothing below its rule, or the empty stack): then build it whole.
    const bool mayEnd = rule >= n || below[rule].count(nullptr) > 0 || below[rule].empty();
    const Entry* e = EntryFor(s, &at, !mayEnd);
    if (e == nullptr) return Result::kError;
    if (!e->deeper || chain.size() >= static_cast<size_t>(kMaxKeyFrames) || rule >= n) return Result::kOk;
    for (const Elem* b : below[rule]) {
      if (b == nullptr) continue;
      chain.push_back(b);
      Result r = extend(ruleOf(b));
      chain.pop_back();
      if (r != Result::kOk) return r;
    }
    return Result::kOk;
  };
  for (size_t r = 0; r < n; r++) {
    const auto& rule = rules[r];
    for (size_t i = 0; i < rule.size(); i++) {
      const Elem* e = &rule[i];
      // every CHAR / CHAR_NOT / CHAR_ANY starts a range (the rest of one is CHAR_ALT, RNG_UPPER)
      if (!IsCharTop(e)) continue;
      for (const Elem* b : below[r]) {
        chain.assign(1, e);
        if (b != nullptr) chain.push_back(b);
        Result res = extend(b == nullptr ? n : ruleOf(b));
        if (res != Result::kOk) return res;
      }
    }
  }
  return Result::kOk;
}

}  // namespace lp::grammar
