// Context: one llama_context with N sequences (KV cells per conversation, unified or split) and
// ONE decode thread that owns it. Each step the thread packs the next token of every generating
// sequence plus prompt chunks of newly joined ones into one llama_batch, decodes once and samples
// each sequence with its own sampler (continuous batching, as llama-server's slot loop). Nothing
// else touches the llama_context; the JS thread talks to the loop through a queue.
#pragma once

#include <napi.h>
#include <llama.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "checkpoints.h"
#include "common.h"
#include "lifetime.h"
#include "model.h"
#include "threads.h"

namespace lp {

struct GenerationJob;

struct ContextConfig {
  uint32_t contextSize = 4096;  // per sequence
  uint32_t batchSize = 512;
  uint32_t sequences = 1;
  bool kvUnified = false;
  int32_t threads = 0;        // 0: physical cores
  int32_t threadsBatch = 0;   // 0: = threads
  uint32_t seed = LLAMA_DEFAULT_SEED;
  bool swaFull = true;                  // llama_context_default_params' choice: full-size SWA cache
  uint32_t checkpoints = 8;             // per sequence, for memories that cannot trim
  size_t checkpointBytes = 256u << 20;  // for the whole context
  uint32_t checkpointInterval = 1024;   // mid-prompt checkpoints at multiples of this position (0: none)
  std::shared_ptr<ModelCore> draftModel;  // speculative decoding with a draft model (speculative.h); null: none
};

// One token into a batch (one sequence; logits or not), as llama.cpp's common_batch_add.
inline void BatchAdd(llama_batch& batch, llama_token token, llama_pos pos, int32_t seq, bool logits) {
  const int32_t i = batch.n_tokens++;
  batch.token[i] = token;
  batch.pos[i] = pos;
  batch.n_seq_id[i] = 1;
  batch.seq_id[i][0] = seq;
  batch.logits[i] = logits ? 1 : 0;
}

class ContextCore : public Stoppable, public std::enable_shared_from_this<ContextCore> {
 public:
  // JS thread. Creates the llama_context and starts the loop; nullptr with *error on failure.
  static std::shared_ptr<ContextCore> Create(Napi::Env env, const std::shared_ptr<ModelCore>& model,
                                             const ContextConfig& config, NativeError* error);
  ~ContextCore() override;

  const std::shared_ptr<ModelCore>& model() const { return model_; }
  // Cells one sequence may use (unified or split, each sequence has this many at most, so the
  // cache, sequences x this, never runs out).
  uint32_t sequenceSize() const { return sequenceSize_; }
  // Cells of the whole cache.
  uint32_t cells() const { return cells_; }
  uint32_t batchSize() const { return batchSize_; }
  uint32_t sequences() const { return nSeq_; }
  bool kvUnified() const { return kvUnified_; }
  bool canShift() const { return canShift_; }
  // The memory cannot roll back by trimming (hybrid / recurrent, or SWA without swaFull): prefix
  // reuse goes through state checkpoints (checkpoints.h).
  bool needsCheckpoints() const { return needsCheckpoints_; }
  int32_t slidingWindow() const { return nSwa_; }
  bool swaFull() const { return swaFull_; }
  int32_t threads() const { return threads_; }
  int32_t threadsBatch() const { return threadsBatch_; }
  uint32_t seed() const { return seed_; }
  // A draft model was given (generations may ask for `speculative: {type: "draft"}`).
  bool hasDraftModel() const { return draftCtx_ != nullptr; }

  // JS thread. -1 when every sequence is taken.
  int32_t Acquire();
  // JS thread: aborts its generation, forgets its cache, frees it for Acquire.
  void ReleaseSequence(int32_t seq);
  bool Taken(int32_t seq);
  bool Busy(int32_t seq);
  // JS thread; the sequence must not be generating (false otherwise).
  bool CopyTokens(int32_t seq, std::vector<llama_token>* out);
  bool ClearCache(int32_t seq);
  // JS thread: queues a generation on its sequence. False when that sequence is generating.
  bool Submit(const std::shared_ptr<GenerationJob>& job);

  // Any thread: something for the loop to look at (a release, an abort).
  void Wake();
  // Any thread: runs fn(true) on the loop thread between steps, or fn(false) when the loop stops
  // first. False (fn never runs) when the loop has already stopped.
  bool RunOnLoop(std::function<void(bool alive)> fn);
  // Loop thread (inside RunOnLoop): one sequence's tokens and full state / replaces them.
  NativeError SaveSequence(int32_t seq, std::vector<llama_token>* tokens, std::vector<uint8_t>* state);
  NativeError LoadSequence(int32_t seq, const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state);
  // Loop thread: empties a sequence that is not generating.
  void ForgetSequence(int32_t seq);
  // Stoppable: ends every generation (stopReason "abort") and the loop; frees the llama_context
  // on the loop thread. Never blocks.
  void RequestStop() override;
  // JS thread: RequestStop, then waits (kStopTimeout at most) until the llama_context and the
  // model reference are gone, so dispose() releases memory at once.
  void StopAndWait();

 private:
  struct Slot {
    std::vector<llama_token> tokens;        // KV mirror: what the cache holds for this sequence
    bool taken = false;                     // handed out to JS
    std::shared_ptr<GenerationJob> job;     // queued or running generation
    // A generation of a previous owner, aborted when the sequence was released: the loop ends it
    // (and then clears the cells) before it admits the next owner's first generation.
    std::shared_ptr<GenerationJob> retiring;
  };

  ContextCore() = default;
  void Loop();
  // One step: admit, build the batch, decode, sample. Loop thread.
  void GatherArrivals(std::unique_lock<std::mutex>& lock, bool idle);
  void Step(std::vector<std::shared_ptr<GenerationJob>>& active);
  void Admit(const std::shared_ptr<GenerationJob>& job);
  bool Shift(GenerationJob& job);
  // Admit's prefix reuse for memories that cannot trim: the reused token count.
  size_t ReuseWithCheckpoints(GenerationJob& job, size_t n);
  // The SWA cells still hold what a continuation at position n attends to.
  bool WindowIntact(int32_t seq, size_t n);
  void ForgetCells(int32_t seq);  // the whole sequence: cells, mirror, checkpoints
  // Admit: when another sequence holds a longer common prefix, its cells are copied
  // (llama_memory_seq_cp; with checkpoints, that sequence's newest checkpoint within the prefix
  // is restored into this one); the reused token count, or n when nothing was copied.
  size_t CopySharedPrefix(GenerationJob& job, size_t n);
  // Admit, after CopySharedPrefix: when a prompt being decoded in another sequence shares more of
  // this prompt than anything cached, this one waits for it (eight agents started at once with
  // one system prompt decode it once).
  void FollowSharedPrefix(GenerationJob& job);
  // Step: true while the job waits for its leader; once it may go, copies what it shares.
  bool Waiting(GenerationJob& job);
  // Step: where this prompt chunk must end so a checkpoint can be taken after it (an interval
  // position; the end of the prompt less one token); `end` when none lies before.
  size_t ChunkEnd(const GenerationJob& job, size_t end) const;
  // Decode: after a prompt chunk, whether its end is a checkpoint position.
  bool CheckpointAfterChunk(const GenerationJob& job) const;
  void Decode();
  void Add(llama_token token, llama_pos pos, int32_t seq, bool logits);  // one token into batch_
  void SampleOne(GenerationJob& job);
  // Speculative decoding (speculative.h; defined in speculative.cpp): fit the draft into `room`
  // batch places (its pending token included), add it after the pending token at `at`, verify
  // it after the decode, and draft after the pending token once it is known.
  void TrimDraft(GenerationJob& job, int32_t room);
  void AddDraft(GenerationJob& job, llama_pos at);
  void VerifyDraft(GenerationJob& job);
  static void AdaptDraftLimit(GenerationJob& job, uint32_t drafted, uint32_t kept);
  void MakeDraft(GenerationJob& job);
  // The draft model's greedy continuation of the sequence (its own cells brought up to the
  // target's tokens and the pending one first), at most `room` tokens; empty on a draft decode
  // failure (the draft cells of that sequence are dropped).
  void DraftFromModel(GenerationJob& job, size_t room, std::vector<llama_token>* out);
  void End(GenerationJob& job, const char* reason, NativeError error = {});
  void FreeNative();
  static bool AbortCallback(void* data);

  std::shared_ptr<ModelCore> model_;
  llama_context* ctx_ = nullptr;
  ThreadPools pools_;
  ContentionGovernor governor_;  // thread counts per decode (threads.h)
  uint32_t cells_ = 0, sequenceSize_ = 0, batchSize_ = 0, nSeq_ = 1;
  bool kvUnified_ = false, canShift_ = false, needsCheckpoints_ = false, swaFull_ = true, recurrent_ = false;
  int32_t nSwa_ = 0;
  int32_t threads_ = 1, threadsBatch_ = 1;
  uint32_t seed_ = LLAMA_DEFAULT_SEED;

  // Shared with the JS thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::deque<std::shared_ptr<GenerationJob>> queued_;
  std::vector<int32_t> clears_;             // sequences whose cells the loop must drop
  std::deque<std::function<void(bool)>> ops_;  // RunOnLoop
  bool wake_ = false;
  bool stopped_ = false;                    // the loop has ended and freed the llama_context
  bool stopped_ops_ = false;                // the loop took its last ops (RunOnLoop refuses)
  std::condition_variable stoppedCv_;
  std::atomic<bool> stopRequested_{false};

  // Loop thread only.
  llama_batch batch_{};
  std::vector<GenerationJob*> inBatch_;     // read by AbortCallback on the same thread
  std::vector<GenerationJob*> stalled_;
  std::vector<GenerationJob*> chosen_;      // this step's batch, before it is laid out by sequence id
  size_t rotate_ = 0;                       // first generating job this step (fairness)
  CheckpointStore checkpoints_;
  size_t checkpointInterval_ = 0;

  // Draft model (speculative.h): its own context with one sequence per target sequence, driven by
  // this loop only; draftMirror_ is what its cells hold per sequence.
  std::shared_ptr<ModelCore> draftModel_;
  llama_context* draftCtx_ = nullptr;
  llama_batch draftBatch_{};
  std::vector<std::vector<llama_token>> draftMirror_;
  int32_t draftVocab_ = 0;
};

// What JS objects (the context, its sequences, running generations) hold: when the last one is
// gone, disposed or garbage-collected, the context stops.
struct ContextHandle {
  std::shared_ptr<ContextCore> core;
  explicit ContextHandle(std::shared_ptr<ContextCore> c) : core(std::move(c)) {}
  ~ContextHandle() { core->RequestStop(); }
};

class ContextWrap : public Napi::ObjectWrap<ContextWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, const std::shared_ptr<ModelCore>& model, Napi::Object options);
  explicit ContextWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value AcquireSequence(const Napi::CallbackInfo& info);
  Napi::Value ReleaseSequence(const Napi::CallbackInfo& info);
  Napi::Value Tokens(const Napi::CallbackInfo& info);
  Napi::Value ClearCache(const Napi::CallbackInfo& info);
  Napi::Value Generate(const Napi::CallbackInfo& info);
  Napi::Value SaveState(const Napi::CallbackInfo& info);
  Napi::Value LoadState(const Napi::CallbackInfo& info);
  const std::shared_ptr<ContextHandle>& Handle(Napi::Env env) const;
  int32_t SeqArg(const Napi::CallbackInfo& info, size_t i) const;

  std::shared_ptr<ContextHandle> handle_;
};

}  // namespace lp
