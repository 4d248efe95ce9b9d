// One generation on one sequence of a context. Its context's decode loop (context.h) advances it
// one step at a time together with the other sequences; its tokens reach JS through its own
// thread-safe function in coalesced batches, bounded by a consumption window: a generation whose
// reader has not released enough tokens is skipped by the loop (the others go on) until it does.
#pragma once

#include <napi.h>
#include <llama.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common.h"
#include "reasoning-budget.h"
#include "sampling.h"
#include "speculative.h"

namespace lp {

struct ContextHandle;
class ContextCore;

struct GenerationParams {
  std::vector<llama_token> prompt;
  int64_t maxTokens = -1;                 // < 0: until the context is full
  std::vector<llama_token> stopTokens;    // sorted
  std::vector<llama_token> preserved;     // sorted; always rendered as text
  bool special = false;                   // render control tokens' text in pieces
  bool contextShift = false;              // a full sequence drops old tokens instead of stopping
  uint32_t shiftKeep = 0;                 // ...keeping this many from its start
  uint32_t flushTokens = 16;              // hand a batch to JS after this many tokens...
  double flushMs = 5.0;                   // ...or this long after the last hand-off
  uint32_t windowTokens = 256;            // at most this many tokens produced but not released
  bool fastForward = false;               // forced text decoded in one batch (forced-tokens.h)
  DraftParams draft;                      // prompt-lookup speculation (speculative.h); off by default
  ReasoningBudgetParams reasoning;        // reasoning budget (reasoning-budget.h); off by default
};

struct GenerationStats {
  uint32_t promptTokens = 0;
  uint32_t reusedTokens = 0;
  // Prompt tokens restored from a state checkpoint (part of reusedTokens; 0 when the cache was
  // trimmed or nothing was reused).
  uint32_t checkpointTokens = 0;
  // Prompt tokens copied from another sequence's cells (part of reusedTokens).
  uint32_t sharedTokens = 0;
  uint32_t generatedTokens = 0;
  uint32_t shifts = 0;                    // context shifts (tokens dropped to make room)
  uint32_t stalledSteps = 0;              // decode steps without its next token (window or batch full)
  uint32_t contendedSteps = 0;            // decode steps it was in that ran on one thread (contention)
  uint32_t forcedTokens = 0;              // of generatedTokens: forced by the grammar, not sampled
  uint32_t forcedRuns = 0;                // batches that carried forced tokens
  uint32_t draftTokens = 0;               // drafted and decoded for verification (speculative.h)
  uint32_t draftAcceptedTokens = 0;       // of those: produced by the sampler as drafted and kept
  uint32_t reasoningTokens = 0;           // emitted inside reasoning blocks (with a reasoning budget)
  uint32_t reasoningForcedTokens = 0;     // of generatedTokens: forced by the spent reasoning budget
  double queueMs = 0;                     // from generate() until the loop took it up
  double promptMs = 0;
  double generateMs = 0;
  double sampleMs = 0;
  std::string stopReason = "abort";       // eog | stop | length | context_full | abort | error
  llama_token stopToken = LLAMA_TOKEN_NULL;
};

// Per-token data beyond the token itself, for the sampler to fill (logprobs: the chosen token's
// and the top alternatives'). Each token carries zero or more (id, value) entries; a batch
// hands them to JS as two flat arrays plus one end offset per token (see CallJsBatch).
struct TokenExtra {
  std::vector<int32_t> ids;
  std::vector<float> values;
};

struct GenerationJob;
void CallJsBatch(Napi::Env env, Napi::Function fn, std::shared_ptr<GenerationJob>* holder, GenerationJob* job);
using GenerationTsfn = Napi::TypedThreadSafeFunction<std::shared_ptr<GenerationJob>, GenerationJob, CallJsBatch>;

struct GenerationJob : std::enable_shared_from_this<GenerationJob> {
  // Set on the JS thread before the job is submitted, then read-only.
  std::shared_ptr<ContextHandle> handle;  // keeps the context running; dropped after the final batch
  ContextCore* core = nullptr;            // lives as long as `handle`
  int32_t seq = 0;
  GenerationParams params;
  std::unique_ptr<Sampler> sampler;       // used and freed by the decode loop
  std::unique_ptr<ReasoningBudget> budget; // with params.reasoning.budget >= 0 (loop thread)
  GenerationTsfn tsfn;
  std::chrono::steady_clock::time_point submitted;

  // Decode-loop state (the loop thread only).
  enum class Phase { Queued, Prompt, Generating, Done } phase = Phase::Queued;
  size_t promptPos = 0;                   // prompt tokens in the cache
  llama_token pending = LLAMA_TOKEN_NULL; // sampled, emitted, not yet decoded
  std::vector<llama_token> forced;        // forced after `pending`, emitted, decoded with it
  std::vector<llama_token> draft;         // drafted after `pending` (not emitted), verified with it
  uint32_t draftLimit = 0;                // the next draft's length limit (speculative.cpp); 0: draftMax
  TextHistory draftText;                  // prompt lookup by text (speculative.h), built on first use
  int32_t batchIndex = -1;                // position of its logits in the current batch
  uint32_t batchTokens = 0;               // tokens it put into the current batch
  std::chrono::steady_clock::time_point started, generateStarted;
  bool sampledOnce = false;
  // Shared prefixes (context.h, FollowSharedPrefix): a prompt that another sequence's prompt,
  // being decoded now, shares further than anything cached waits until that one reaches waitAt,
  // then copies it. `breaks`: where this prompt's chunks end for a follower's checkpoint.
  std::shared_ptr<GenerationJob> waitFor;
  size_t waitAt = 0;
  std::vector<size_t> breaks;             // ascending

  std::atomic<bool> abortRequested{false};
  bool tsfnAlive = true;                  // JS thread only

  // Shared between the loop and the JS thread.
  std::mutex mu;
  std::vector<int32_t> outTokens;
  std::string outBytes;
  std::vector<uint32_t> outEnds;
  TokenExtra outExtra;
  std::vector<uint32_t> outExtraEnds;     // per token: end of its entries in outExtra
  std::vector<uint8_t> outForced;         // per token: 1 = forced (empty: none in this batch)
  uint64_t produced = 0;
  uint64_t released = 0;
  bool callPending = false;
  // The thread-safe function was finalized (Node deletes it at environment teardown whatever
  // our thread count says): no call may touch it any more.
  bool tsfnGone = false;
  bool finished = false;
  bool finalDelivered = false;
  GenerationStats stats;                  // complete once `finished`
  NativeError error;
  std::chrono::steady_clock::time_point lastFlush;

  // Loop thread: hands one token to JS (extra may be null; forced: the grammar forced it).
  // `forced`: not sampled (fast-forward or the reasoning budget); `byBudget`: the budget's text.
  void Emit(llama_token token, const std::string& piece, const TokenExtra* extra, bool forced = false, bool byBudget = false);
  // Loop thread: the generation is over; the final batch goes to JS.
  void Finish();
  // Loop thread: true while the reader holds `windowTokens` unreleased tokens.
  bool WindowFull();
  // Any thread; idempotent.
  void RequestAbort();
  // JS thread: the reader consumed `n` more tokens.
  void Release(uint64_t n);

 private:
  void ScheduleCallLocked();
  friend void CallJsBatchImpl(Napi::Env env, Napi::Function fn, GenerationJob* job);
};

class GenerationWrap : public Napi::ObjectWrap<GenerationWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<GenerationJob> job);
  explicit GenerationWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Abort(const Napi::CallbackInfo& info);
  Napi::Value Release(const Napi::CallbackInfo& info);
  Napi::Value Ref(const Napi::CallbackInfo& info);
  Napi::Value Unref(const Napi::CallbackInfo& info);
  std::shared_ptr<GenerationJob> job_;
};

// JS thread: reads the options of generate(seq, prompt, options, onBatch) into a job with its
// sampler and thread-safe function; the caller submits it. Throws ERR_GRAMMAR_INVALID, ...
std::shared_ptr<GenerationJob> CreateGeneration(Napi::Env env, const llama_vocab* vocab, grammar::VocabIndexHolder* vocabIndex, uint32_t defaultSeed,
                                                Napi::Int32Array prompt, Napi::Object options, Napi::Function onBatch);

}  // namespace lp
