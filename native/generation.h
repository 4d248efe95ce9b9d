// One generation: prompt decode + sample/decode loop on ONE native thread (the llama.cpp caller),
// tokens handed to JS through a thread-safe function in coalesced batches, bounded by a
// consumption window (the thread waits when JS has not released enough tokens).
#pragma once

#include <napi.h>
#include <llama.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common.h"
#include "context.h"
#include "sampling.h"

namespace lp {

struct GenerationParams {
  std::vector<llama_token> prompt;
  int64_t maxTokens = -1;                 // < 0: until the context is full
  std::vector<llama_token> stopTokens;    // sorted
  std::vector<llama_token> preserved;     // sorted; always rendered as text
  bool special = false;                   // render control tokens' text in pieces
  uint32_t flushTokens = 16;              // hand a batch to JS after this many tokens...
  double flushMs = 5.0;                   // ...or this long after the last hand-off
  uint32_t windowTokens = 256;            // at most this many tokens produced but not released
};

struct GenerationStats {
  uint32_t promptTokens = 0;
  uint32_t reusedTokens = 0;
  uint32_t generatedTokens = 0;
  double promptMs = 0;
  double generateMs = 0;
  double sampleMs = 0;
  std::string stopReason = "abort";
  llama_token stopToken = LLAMA_TOKEN_NULL;
};

struct GenerationJob;
void CallJsBatch(Napi::Env env, Napi::Function fn, std::shared_ptr<GenerationJob>* holder, GenerationJob* job);
using GenerationTsfn = Napi::TypedThreadSafeFunction<std::shared_ptr<GenerationJob>, GenerationJob, CallJsBatch>;

struct GenerationJob {
  std::shared_ptr<ContextCore> context;
  std::unique_ptr<Sampler> sampler;
  GenerationParams params;
  GenerationTsfn tsfn;
  std::thread thread;
  std::mutex joinMutex;               // Join() runs on a JS thread or at process exit
  bool tsfnAlive = true;              // JS thread only
  std::atomic<bool> threadDone{false};

  // Shared between the generation thread and the JS thread.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> outTokens;
  std::string outBytes;
  std::vector<uint32_t> outEnds;
  uint64_t produced = 0;
  uint64_t released = 0;
  bool callPending = false;
  bool finished = false;
  bool finalDelivered = false;
  GenerationStats stats;
  NativeError error;
  std::chrono::steady_clock::time_point lastFlush;

  void Run();
  // JS thread. Stops the loop (and a long prompt decode) soon; idempotent.
  void RequestAbort();
  // JS thread. Waits for the native thread to end.
  void Join();
  void Release(uint64_t n);

 private:
  bool Aborted() const { return context->abortRequested.load(std::memory_order_relaxed); }
  bool DecodePrompt();
  bool DecodeOne(llama_token token);
  bool HandleDecodeFailure(int rc);
  void Emit(llama_token token, const std::string& piece);
  void ScheduleCallLocked();
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

// JS thread: validates, builds the sampler and starts the thread. Throws ERR_BUSY,
// ERR_GRAMMAR_INVALID, ERR_CONTEXT_FULL, ...
Napi::Value StartGeneration(Napi::Env env, const std::shared_ptr<ContextCore>& context, Napi::Int32Array prompt,
                            Napi::Object options, Napi::Function onBatch, std::shared_ptr<GenerationJob>* started);

// Environment teardown: stop and join every generation of this environment.
void StopAllGenerations(Napi::Env env);

// Process exit (process.exit(), an uncaught exception) skips environment teardown and goes
// straight to exit(): the threads must stop before static destructors (llama.cpp's, ggml's) run.
// JS calls stopGenerationsForExit(processWide) from process.on("exit"); an atexit handler is the
// fallback (it runs after statics created later than the addon's load are already gone).
void StopAllProcessGenerations();
void InstallExitHandler();
Napi::Value StopGenerationsForExit(const Napi::CallbackInfo& info);

}  // namespace lp
