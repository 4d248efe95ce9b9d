// The decode thread of a context (context.h): one llama_batch per step for every sequence.
#include <algorithm>
#include <chrono>

#include "context.h"
#include "forced-tokens.h"
#include "generation.h"

namespace lp {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool Contains(const std::vector<llama_token>& sorted, llama_token t) {
  return std::binary_search(sorted.begin(), sorted.end(), t);
}

// Something the step can do for this job now.
bool Runnable(GenerationJob& job) {
  if (job.abortRequested.load(std::memory_order_relaxed)) return true;
  if (job.phase == GenerationJob::Phase::Prompt) return true;
  return job.phase == GenerationJob::Phase::Generating && !job.WindowFull();
}

}  // namespace

bool ContextCore::AbortCallback(void* data) {
  // Called by ggml after every graph node, on this loop's own thread. A decode stops early only
  // when nobody wants its result: the context stops, or every sequence in the batch was aborted
  // (aborting one of several waits for the step, which keeps the others' work).
  auto* core = static_cast<ContextCore*>(data);
  if (core->stopRequested_.load(std::memory_order_relaxed)) return true;
  if (core->inBatch_.empty()) return false;
  for (GenerationJob* job : core->inBatch_) {
    if (!job->abortRequested.load(std::memory_order_relaxed)) return false;
  }
  return true;
}

// Prompts submitted together (several generate() calls in one turn of the JS event loop) reach
// this thread one at a time: the first wakes it before the next is queued. Decoded apart, each
// late one costs a step of its own over the whole shared prefix (a 60-token step at a 4k prefix
// costs most of a 360-token one). So an idle loop that wakes to new prompts waits while more keep
// arriving, 0.5 ms after the last, 3 ms in all, and starts them in one step. Only contexts with
// several sequences, and only when nothing else is running (a running generation never waits).
void ContextCore::GatherArrivals(std::unique_lock<std::mutex>& lock, bool idle) {
  if (!idle || nSeq_ < 2 || queued_.empty()) return;
  const auto deadline = Clock::now() + std::chrono::microseconds(3000);
  size_t seen = queued_.size();
  while (seen < nSeq_ && !stopRequested_.load()) {
    const auto until = std::min(deadline, Clock::now() + std::chrono::microseconds(500));
    if (!cv_.wait_until(lock, until, [&] { return stopRequested_.load() || queued_.size() > seen; })) break;
    seen = queued_.size();
  }
}

void ContextCore::Loop() {
  std::vector<std::shared_ptr<GenerationJob>> active;
  while (true) {
    std::vector<std::shared_ptr<GenerationJob>> joined;
    std::vector<int32_t> clears;
    std::deque<std::function<void(bool)>> ops;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        if (stopRequested_.load() || wake_ || !queued_.empty() || !clears_.empty() || !ops_.empty()) return true;
        for (auto& job : active) {
          if (Runnable(*job)) return true;
        }
        return false;
      });
      wake_ = false;
      GatherArrivals(lock, active.empty());
      stop = stopRequested_.load();
      joined.assign(queued_.begin(), queued_.end());
      queued_.clear();
      clears.swap(clears_);
      ops.swap(ops_);
      if (stop) stopped_ops_ = true;
    }
    if (stop) {
      for (auto& op : ops) op(false);
      for (auto& job : joined) End(*job, "abort");
      for (auto& job : active) End(*job, "abort");
      break;
    }
    // Aborted generations leave first, so a cleared sequence is cleared after its last token.
    for (auto& job : active) {
      if (job->abortRequested.load()) End(*job, "abort");
    }
    llama_memory_t mem = llama_get_memory(ctx_);
    for (int32_t seq : clears) {
      llama_memory_seq_rm(mem, seq, -1, -1);
      checkpoints_.Clear(seq);
      std::lock_guard<std::mutex> lock(mu_);
      slots_[static_cast<size_t>(seq)].tokens.clear();
    }
    for (auto& op : ops) op(true);
    for (auto& job : joined) {
      if (job->abortRequested.load()) {
        End(*job, "abort");
        continue;
      }
      Admit(job);
      active.push_back(job);
    }
    Step(active);
    active.erase(std::remove_if(active.begin(), active.end(),
                                [](const std::shared_ptr<GenerationJob>& j) { return j->phase == GenerationJob::Phase::Done; }),
                 active.end());
  }
  // Free the context here, on its own thread, before this thread counts as finished. The freed
  // memory goes back to the system a moment later, from JS (lib/llama/memory-return.ts), unless
  // another context is created first and reuses it.
  FreeNative();
  model_.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  stoppedCv_.notify_all();
}

void ContextCore::Admit(const std::shared_ptr<GenerationJob>& job) {
  // Reuse the longest common prefix the sequence already holds; re-decode at least the last
  // prompt token so its logits exist.
  std::vector<llama_token>& cached = slots_[static_cast<size_t>(job->seq)].tokens;
  const std::vector<llama_token>& prompt = job->params.prompt;
  size_t n = 0;
  while (n < cached.size() && n < prompt.size() && cached[n] == prompt[n]) n++;
  if (n == prompt.size()) n--;
  llama_memory_t mem = llama_get_memory(ctx_);
  if (needsCheckpoints_) {
    n = ReuseWithCheckpoints(*job, n);
  } else if (!llama_memory_seq_rm(mem, job->seq, static_cast<llama_pos>(n), -1)) {
    llama_memory_seq_rm(mem, job->seq, -1, -1);
    n = 0;
  }
  cached.resize(n);
  if (nSeq_ > 1) n = CopySharedPrefix(*job, n);
  job->promptPos = n;
  job->started = Clock::now();
  job->stats.queueMs = std::chrono::duration<double, std::milli>(job->started - job->submitted).count();
  job->stats.promptTokens = static_cast<uint32_t>(prompt.size());
  job->stats.reusedTokens = static_cast<uint32_t>(n);
  job->phase = GenerationJob::Phase::Prompt;
  if (nSeq_ > 1) FollowSharedPrefix(*job);
}

size_t ContextCore::ReuseWithCheckpoints(GenerationJob& job, size_t n) {
  // As llama-server's prompt admission with context checkpoints: keep the cells when they can
  // continue at n (nothing to roll back, or SWA cells that still cover the window); otherwise
  // restore the newest checkpoint at or before n and trim the full-attention cells to it.
  const std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  llama_memory_t mem = llama_get_memory(ctx_);
  // All of it: the live state continues as it is (llama.cpp keeps the window it needs).
  const bool kept = n == cached.size() || (llama_memory_seq_rm(mem, job.seq, static_cast<llama_pos>(n), -1) && WindowIntact(job.seq, n));
  if (!kept) {
    const Checkpoint* cp = checkpoints_.Newest(job.seq, n);
    if (cp != nullptr && checkpoints_.Restore(ctx_, job.seq, *cp) &&
        llama_memory_seq_rm(mem, job.seq, static_cast<llama_pos>(cp->nTokens), -1)) {
      n = cp->nTokens;
      job.stats.checkpointTokens = static_cast<uint32_t>(n);
    } else {
      llama_memory_seq_rm(mem, job.seq, -1, -1);
      n = 0;
    }
  }
  checkpoints_.DropAbove(job.seq, n);
  return n;
}

size_t ContextCore::CopySharedPrefix(GenerationJob& job, size_t n) {
  // Worth a copy only well past what the sequence reuses itself (a copy replaces its cells).
  constexpr size_t kMinGain = 32;
  const std::vector<llama_token>& prompt = job.params.prompt;
  int32_t best = -1;
  size_t bestLen = n + kMinGain;
  const Checkpoint* bestCp = nullptr;
  std::unique_lock<std::mutex> lock(mu_);  // the JS thread clears other sequences' mirrors
  for (size_t j = 0; j < slots_.size(); j++) {
    if (static_cast<int32_t>(j) == job.seq || !slots_[j].taken || slots_[j].retiring) continue;
    const std::vector<llama_token>& other = slots_[j].tokens;
    size_t m = 0;
    while (m < other.size() && m < prompt.size() && other[m] == prompt[m]) m++;
    m = std::min(m, prompt.size() - 1);  // at least one token to decode, for its logits
    const Checkpoint* cp = nullptr;
    // A memory that cannot trim holds its state only at the other sequence's end: a shorter
    // prefix starts from that sequence's newest checkpoint within it.
    if (needsCheckpoints_ && m != other.size()) {
      cp = checkpoints_.Newest(static_cast<int32_t>(j), m);
      if (cp == nullptr) continue;
      m = cp->nTokens;
    }
    if (m >= bestLen) {
      best = static_cast<int32_t>(j);
      bestLen = m;
      bestCp = cp;
    }
  }
  if (best < 0) return n;
  std::vector<llama_token> shared(slots_[static_cast<size_t>(best)].tokens.begin(),
                                  slots_[static_cast<size_t>(best)].tokens.begin() + static_cast<std::ptrdiff_t>(bestLen));
  lock.unlock();
  llama_memory_t mem = llama_get_memory(ctx_);
  // All of the other sequence's cells, then trimmed: with split KV llama.cpp copies between
  // streams only whole (llama_kv_cache::seq_cp asserts otherwise); unified KV shares the cells.
  // A recurrent state is shared until this sequence writes to it.
  llama_memory_seq_rm(mem, job.seq, -1, -1);
  checkpoints_.Clear(job.seq);
  bool copied = true;
  if (bestCp != nullptr && nSwa_ > 0 && !swaFull_ && !kvUnified_) {
    // Between split streams llama.cpp copies the buffers only at the next decode
    // (llama_kv_cache::update), which would overwrite the SWA cells the checkpoint restores
    // now: copy the other sequence's state through memory instead.
    std::vector<uint8_t> state(llama_state_seq_get_size(ctx_, best));
    copied = llama_state_seq_get_data(ctx_, state.data(), state.size(), best) == state.size() &&
             llama_state_seq_set_data(ctx_, state.data(), state.size(), job.seq) == state.size();
  } else {
    llama_memory_seq_cp(mem, best, job.seq, -1, -1);
  }
  std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  const bool restored = copied && (bestCp == nullptr || checkpoints_.Restore(ctx_, job.seq, *bestCp));
  // No window check: without a checkpoint the memory either trims anywhere or the copy is all of
  // the other sequence (its live state); a checkpoint's SWA cells are the window its next token
  // needs (llama.cpp writes the unmasked ones).
  if (!restored || !llama_memory_seq_rm(mem, job.seq, static_cast<llama_pos>(bestLen), -1)) {
    ForgetCells(job.seq);
    job.stats.checkpointTokens = 0;
    return 0;
  }
  {
    std::lock_guard<std::mutex> guard(mu_);
    cached = std::move(shared);
  }
  job.stats.sharedTokens = static_cast<uint32_t>(bestLen);
  job.stats.checkpointTokens = bestCp != nullptr ? static_cast<uint32_t>(bestLen) : 0;
  return bestLen;
}

void ContextCore::FollowSharedPrefix(GenerationJob& job) {
  constexpr size_t kMinGain = 32;  // as CopySharedPrefix
  const std::vector<llama_token>& prompt = job.params.prompt;
  std::shared_ptr<GenerationJob> leader;
  size_t at = job.promptPos + kMinGain;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& slot : slots_) {
      GenerationJob* other = slot.job.get();
      // Leaders only among prompts being decoded that wait for nobody (no chains, no cycles).
      if (other == nullptr || other == &job || other->phase != GenerationJob::Phase::Prompt || other->waitFor ||
          other->abortRequested.load()) {
        continue;
      }
      const std::vector<llama_token>& theirs = other->params.prompt;
      size_t m = 0;
      while (m < theirs.size() && m < prompt.size() && theirs[m] == prompt[m]) m++;
      m = std::min(m, prompt.size() - 1);
      // Past it already: CopySharedPrefix took what its cells or checkpoints offer.
      if (m <= other->promptPos || m < at) continue;
      leader = slot.job;
      at = m;
    }
  }
  if (!leader) return;
  job.waitFor = std::move(leader);
  job.waitAt = at;
  // A memory that cannot trim needs the leader's state at exactly that point.
  if (checkpoints_.enabled()) {
    std::vector<size_t>& breaks = job.waitFor->breaks;
    auto it = std::lower_bound(breaks.begin(), breaks.end(), at);
    if (it == breaks.end() || *it != at) breaks.insert(it, at);
  }
}

bool ContextCore::Waiting(GenerationJob& job) {
  if (!job.waitFor) return false;
  const GenerationJob& leader = *job.waitFor;
  if (leader.phase == GenerationJob::Phase::Prompt && !leader.abortRequested.load() && leader.promptPos < job.waitAt) return true;
  job.waitFor.reset();
  const size_t n = CopySharedPrefix(job, job.promptPos);
  job.promptPos = n;
  job.stats.reusedTokens = static_cast<uint32_t>(n);
  return false;
}

size_t ContextCore::ChunkEnd(const GenerationJob& job, size_t end) const {
  if (!checkpoints_.enabled()) return end;
  // The last prompt token goes in a batch of its own, so the state before it can be saved: the
  // same prompt again (a retry) and the next turn restore it.
  if (job.promptPos + 1 < end) end--;
  if (checkpointInterval_ > 0) {
    // Mid-prompt checkpoints at fixed positions, the same in every sequence: a later prompt that
    // shares only part of this one (another agent with the same system prompt, an edited
    // message) starts from the last one before it leaves.
    const size_t next = (job.promptPos / checkpointInterval_ + 1) * checkpointInterval_;
    if (next < end) end = next;
  }
  for (size_t at : job.breaks) {
    if (at > job.promptPos) {
      end = std::min(end, at);
      break;
    }
  }
  return end;
}

bool ContextCore::CheckpointAfterChunk(const GenerationJob& job) const {
  if (!checkpoints_.enabled() || job.promptPos <= job.stats.reusedTokens) return false;
  const size_t size = job.params.prompt.size();
  if (job.promptPos + 1 == size) return true;
  if (std::binary_search(job.breaks.begin(), job.breaks.end(), job.promptPos)) return true;
  return job.promptPos < size && checkpointInterval_ > 0 && job.promptPos % checkpointInterval_ == 0;
}

bool ContextCore::WindowIntact(int32_t seq, size_t n) {
  if (nSwa_ <= 0 || swaFull_ || n == 0) return true;
  // The first new token (position n) attends to the nSwa positions before it; the SWA cells
  // start at pos_min. Same bound as llama-server (pos_min below n - n_swa, or the start).
  const llama_pos posMin = llama_memory_seq_pos_min(llama_get_memory(ctx_), seq);
  // Empty (-1): trimming to n removed every cell the window had left.
  return posMin == 0 || (posMin > 0 && posMin < static_cast<llama_pos>(n) - nSwa_);
}

void ContextCore::ForgetCells(int32_t seq) {
  llama_memory_seq_rm(llama_get_memory(ctx_), seq, -1, -1);
  checkpoints_.Clear(seq);
  std::lock_guard<std::mutex> lock(mu_);
  slots_[static_cast<size_t>(seq)].tokens.clear();
}

// llama-server's context shift: keep the first `keep` tokens, drop the older half of the rest,
// move the remainder down. False when the cache cannot shift positions (or nothing can go).
bool ContextCore::Shift(GenerationJob& job) {
  if (!canShift_) return false;
  std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
  const int32_t nPast = static_cast<int32_t>(cached.size());
  const int32_t keep = std::min<int32_t>(static_cast<int32_t>(job.params.shiftKeep), static_cast<int32_t>(sequenceSize_) - 4);
  const int32_t left = nPast - std::max(0, keep);
  const int32_t discard = left / 2;
  if (keep < 0 || discard <= 0) return false;
  llama_memory_t mem = llama_get_memory(ctx_);
  if (!llama_memory_seq_rm(mem, job.seq, keep, keep + discard)) return false;
  llama_memory_seq_add(mem, job.seq, keep + discard, nPast, -discard);
  cached.erase(cached.begin() + keep, cached.begin() + keep + discard);
  checkpoints_.Clear(job.seq);  // their positions moved
  job.stats.shifts++;
  return true;
}

void ContextCore::Step(std::vector<std::shared_ptr<GenerationJob>>& active) {
  batch_.n_tokens = 0;
  inBatch_.clear();
  const int32_t capacity = static_cast<int32_t>(batchSize_);
  // First the next token of every generating sequence (each step, so none starves); when they
  // outnumber the batch, start one further every step, and leave a quarter of it to waiting
  // prompts so they join (llama-server's batch is always larger than its slots; ours may not be).
  const size_t n = active.size();
  bool promptsWaiting = false;
  for (auto& job : active) promptsWaiting |= job->phase == GenerationJob::Phase::Prompt && !job->abortRequested.load();
  const int32_t genCapacity = promptsWaiting && capacity > 1 ? capacity - std::max(1, capacity / 4) : capacity;
  std::vector<GenerationJob*>& stalled = stalled_;
  stalled.clear();
  std::vector<GenerationJob*>& chosen = chosen_;
  chosen.clear();
  int32_t used = 0;
  for (size_t k = 0; k < n; k++) {
    GenerationJob& job = *active[(rotate_ + k) % n];
    if (job.phase != GenerationJob::Phase::Generating || job.abortRequested.load()) continue;
    TrimDraft(job, (used > 0 ? std::min(genCapacity, capacity) : capacity) - used);
    const int32_t need = 1 + static_cast<int32_t>(job.forced.size() + job.draft.size());  // with its forced or draft tokens
    if ((used > 0 && used + need > genCapacity) || used + need > capacity || job.WindowFull()) {
      stalled.push_back(&job);
      continue;
    }
    std::vector<llama_token>& cached = slots_[static_cast<size_t>(job.seq)].tokens;
    if (cached.size() + need > sequenceSize_ && !(job.params.contextShift && Shift(job))) {
      End(job, "context_full");
      continue;
    }
    job.batchTokens = static_cast<uint32_t>(need);
    chosen.push_back(&job);
    used += need;
  }
  rotate_++;
  // Then prompt chunks of the sequences that joined, oldest first, up to the batch size.
  for (auto& ptr : active) {
    GenerationJob& job = *ptr;
    if (used >= capacity) break;
    if (job.phase != GenerationJob::Phase::Prompt || job.abortRequested.load() || Waiting(job)) continue;
    const size_t end = ChunkEnd(job, job.params.prompt.size());
    job.batchTokens = static_cast<uint32_t>(std::min<size_t>(static_cast<size_t>(capacity - used), end - job.promptPos));
    chosen.push_back(&job);
    used += static_cast<int32_t>(job.batchTokens);
  }
  if (chosen.empty()) return;
  // Laid out by sequence id: with split KV (one stream per sequence) llama.cpp puts only
  // consecutive increasing sequence ids into one ubatch (llama_batch_allocr::split_equal), so a
  // rotated order ([1, 2, 3, 0]) costs a second graph compute every step.
  std::sort(chosen.begin(), chosen.end(), [](const GenerationJob* a, const GenerationJob* b) { return a->seq < b->seq; });
  for (GenerationJob* job : chosen) {
    if (job->phase == GenerationJob::Phase::Generating) {
      const llama_pos at = static_cast<llama_pos>(slots_[static_cast<size_t>(job->seq)].tokens.size());
      Add(job->pending, at, job->seq, job->forced.empty());
      for (size_t i = 0; i < job->forced.size(); i++) Add(job->forced[i], at + 1 + static_cast<llama_pos>(i), job->seq, i + 1 == job->forced.size());
      job->batchIndex = batch_.n_tokens - 1;
      AddDraft(*job, at + 1);  // (only without forced tokens: the pending token's logits come first)
    } else {
      const std::vector<llama_token>& prompt = job->params.prompt;
      for (uint32_t i = 0; i < job->batchTokens; i++) {
        size_t at = job->promptPos + i;
        Add(prompt[at], static_cast<llama_pos>(at), job->seq, at + 1 == prompt.size());
      }
      job->batchIndex = job->promptPos + job->batchTokens == prompt.size() ? batch_.n_tokens - 1 : -1;
    }
    inBatch_.push_back(job);
  }
  for (GenerationJob* job : stalled) job->stats.stalledSteps++;
  Decode();
}

void ContextCore::Add(llama_token token, llama_pos pos, int32_t seq, bool logits) { BatchAdd(batch_, token, pos, seq, logits); }

void ContextCore::Decode() {
  governor_.Apply(ctx_, threads_, threadsBatch_);
  if (governor_.contended()) {
    for (GenerationJob* job : inBatch_) job->stats.contendedSteps++;
  }
  const int rc = llama_decode(ctx_, batch_);
  std::vector<GenerationJob*> jobs;
  jobs.swap(inBatch_);  // the abort callback looks at inBatch_ only during llama_decode
  llama_memory_t mem = llama_get_memory(ctx_);
  if (rc != 0) {
    // Drop whatever part of the batch reached the cache, so each mirror stays exact.
    for (GenerationJob* job : jobs) {
      std::vector<llama_token>& cached = slots_[static_cast<size_t>(job->seq)].tokens;
      // A failed decode may have advanced a recurrent state: only cells that trim stay.
      if (needsCheckpoints_ || !llama_memory_seq_rm(mem, job->seq, static_cast<llama_pos>(cached.size()), -1)) ForgetCells(job->seq);
    }
    for (GenerationJob* job : jobs) {
      if (rc == 2 || job->abortRequested.load() || stopRequested_.load()) {
        End(*job, "abort");
      } else if (rc == 1) {
        // Each sequence stays within its share, so this means llama.cpp found no room anyway.
        End(*job, "context_full");
      } else {
        End(*job, "abort", {"ERR_DECODE", "llama_decode failed with status " + std::to_string(rc)});
      }
    }
    return;
  }
  for (GenerationJob* job : jobs) {
    std::vector<llama_token>& cached = slots_[static_cast<size_t>(job->seq)].tokens;
    if (job->phase == GenerationJob::Phase::Generating) {
      cached.push_back(job->pending);
      cached.insert(cached.end(), job->forced.begin(), job->forced.end());
      job->forced.clear();
    } else {
      const auto& prompt = job->params.prompt;
      cached.insert(cached.end(), prompt.begin() + static_cast<std::ptrdiff_t>(job->promptPos),
                    prompt.begin() + static_cast<std::ptrdiff_t>(job->promptPos + job->batchTokens));
      job->promptPos += job->batchTokens;
      if (CheckpointAfterChunk(*job)) checkpoints_.Take(ctx_, job->seq, job->promptPos);
      if (job->promptPos == prompt.size()) {
        job->stats.promptMs = MsSince(job->started);
        job->generateStarted = Clock::now();
        job->phase = GenerationJob::Phase::Generating;
      }
    }
  }
  for (GenerationJob* job : jobs) {
    if (job->batchIndex >= 0 && job->phase == GenerationJob::Phase::Generating) {
      if (job->draft.empty()) {
        SampleOne(*job);
      } else {
        VerifyDraft(*job);
      }
      MakeDraft(*job);
    }
  }
}

void ContextCore::SampleOne(GenerationJob& job) {
  const GenerationParams& p = job.params;
  if (job.abortRequested.load()) return End(job, "abort");
  if (p.maxTokens >= 0 && job.stats.generatedTokens >= p.maxTokens) return End(job, "length");
  const llama_vocab* vocab = model_->vocab;
  Clock::time_point s0 = Clock::now();
  NativeError err;
  // Fast-forward (forced-tokens.h): room for forced tokens in the next batch, the sequence and maxTokens.
  auto forcedRoom = [&](size_t taken) {
    const size_t cachedNow = slots_[static_cast<size_t>(job.seq)].tokens.size() + taken;
    size_t room = std::min<size_t>(batchSize_ - taken, sequenceSize_ > cachedNow ? sequenceSize_ - cachedNow : 0);
    if (p.maxTokens >= 0) room = std::min<size_t>(room, static_cast<size_t>(p.maxTokens - job.stats.generatedTokens));
    return room;
  };
  if (job.budget && job.budget->Forcing()) {
    // The reasoning budget is spent: its end marker goes into the next batch, not a sample.
    bool started = false;
    if (!StartBudgetForced(job, vocab, forcedRoom(0), &started, &err)) return End(job, "abort", err);
    job.stats.sampleMs += MsSince(s0);
    if (started) {
      if (p.maxTokens >= 0 && job.stats.generatedTokens >= p.maxTokens) return End(job, "length");
      return;
    }
    s0 = Clock::now();
  }
  if (p.fastForward && !job.sampledOnce) {
    // Text forced right after the prompt goes into the next batch instead of a sampled token.
    job.sampledOnce = true;
    bool started = false;
    if (!StartForced(job, vocab, slots_[static_cast<size_t>(job.seq)].tokens.back(), forcedRoom(0), &started, &err)) return End(job, "abort", err);
    job.stats.sampleMs += MsSince(s0);
    if (started) {
      if (p.maxTokens >= 0 && job.stats.generatedTokens >= p.maxTokens) return End(job, "length");
      return;
    }
    s0 = Clock::now();
  }
  llama_token token = job.sampler->Sample(ctx_, job.batchIndex, &err);
  if (token == LLAMA_TOKEN_NULL) return End(job, "abort", err);
  if (llama_vocab_is_eog(vocab, token) || Contains(p.stopTokens, token)) {
    job.stats.sampleMs += MsSince(s0);
    job.stats.stopToken = token;
    return End(job, llama_vocab_is_eog(vocab, token) ? "eog" : "stop");
  }
  if (!job.sampler->Accept(token, &err)) return End(job, "abort", err);
  job.stats.sampleMs += MsSince(s0);
  TokenExtra extra;  // the sampler's per-token data (logprobs), when asked for
  if (!job.sampler->extraIds().empty()) {
    extra.ids = job.sampler->extraIds();
    extra.values = job.sampler->extraValues();
  }
  job.Emit(token, TokenToPiece(vocab, token, p.special || Contains(p.preserved, token)), extra.ids.empty() ? nullptr : &extra);
  job.stats.generatedTokens++;
  if (p.maxTokens >= 0 && job.stats.generatedTokens >= p.maxTokens) return End(job, "length");
  job.pending = token;
  // (with the reasoning budget spent on this token its end marker comes first, forced text after)
  if (p.fastForward && !(job.budget && job.budget->Forcing())) {
    // The grammar's forced text after it goes into the same batch (forced-tokens.h), as far as
    // the batch, the sequence and maxTokens leave room.
    Clock::time_point f0 = Clock::now();
    if (!QueueForced(job, vocab, token, forcedRoom(1), &err)) return End(job, "abort", err);
    job.stats.sampleMs += MsSince(f0);
    if (p.maxTokens >= 0 && job.stats.generatedTokens >= p.maxTokens) return End(job, "length");
  }
}

void ContextCore::End(GenerationJob& job, const char* reason, NativeError error) {
  if (job.phase == GenerationJob::Phase::Done) return;
  if (job.phase == GenerationJob::Phase::Prompt) job.stats.promptMs = MsSince(job.started);
  if (job.phase == GenerationJob::Phase::Generating) {
    job.stats.generateMs = MsSince(job.generateStarted);
    // The next turn's prefix (or a retry of the next turn with another ending) starts here.
    const size_t held = slots_[static_cast<size_t>(job.seq)].tokens.size();
    if (checkpoints_.enabled() && error.code.empty() && !stopRequested_.load() && !job.abortRequested.load() && held > job.params.prompt.size()) {
      checkpoints_.Take(ctx_, job.seq, held);
    }
  }
  job.waitFor.reset();
  if (job.budget) job.stats.reasoningTokens = job.budget->reasoningTokens();
  job.stats.stopReason = reason;
  job.error = std::move(error);
  job.sampler.reset();  // grammar state freed here, with the model still loaded
  job.phase = GenerationJob::Phase::Done;
  {
    // The sequence is free for its next generation before the final batch reaches JS.
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(job.seq)];
    if (slot.job.get() == &job) slot.job.reset();
    if (slot.retiring.get() == &job) slot.retiring.reset();
  }
  job.Finish();
}

}  // namespace lp
