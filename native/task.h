// A blocking operation (loading a model, tokenizing a large text) run on its own counted thread,
// settling a JS promise through a thread-safe function. Unlike Napi::AsyncWorker, nothing here
// calls into JS while the environment is torn down: when the thread-safe function is gone the
// result is dropped, and environment teardown / process exit cancel the work (RequestStop) and
// wait for the thread (lifetime.h).
// A Task holds no JS handle (no Napi::Reference, no napi_ref): its last owner may be its own
// thread, which would then delete the handle off the JS thread, racing V8 (docs/contexts.md,
// "Memory-safety builds": the heap corruption of worker.terminate() during a load). The progress
// callback is the thread-safe function's own JS function, which Node releases on the JS thread.
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "lifetime.h"

namespace lp {

class Task : public Stoppable, public std::enable_shared_from_this<Task> {
 public:
  // Task thread. Must not touch N-API.
  virtual void Execute() = 0;
  // JS thread, once, after Execute: resolve or reject. A throw rejects with that error.
  virtual void Settle(Napi::Env env, Napi::Promise::Deferred& deferred) = 0;
  // JS thread, after Progress() was called on the task thread (calls coalesce); `callback` is
  // the function given to Start.
  virtual void OnProgress(Napi::Env, Napi::Function /*callback*/) {}
  // Stoppable: asks Execute to give up soon (where it can).
  void RequestStop() override { stop_.store(true); }

  // JS thread: starts the thread and returns the promise. Throws when no thread can be started.
  // `onProgress` (may be empty) is what OnProgress gets.
  static Napi::Promise Start(Napi::Env env, const std::shared_ptr<Task>& task, const char* name,
                             Napi::Function onProgress = Napi::Function());

 protected:
  bool StopRequested() const { return stop_.load(std::memory_order_relaxed); }
  // Task thread: schedules one OnProgress call unless one is pending.
  void Progress();

 private:
  struct Holder;
  static void CallJs(Napi::Env env, Napi::Function, Holder* holder, int* kind);
  using Tsfn = Napi::TypedThreadSafeFunction<Holder, int, CallJs>;

  // Calls the thread-safe function unless it was finalized (Node deletes it at environment
  // teardown, before our cleanup hook stops this thread).
  bool Call(int* kind);

  std::atomic<bool> stop_{false};
  std::atomic<bool> progressPending_{false};
  std::mutex tsfnMu_;
  bool tsfnGone_ = false;
  Tsfn tsfn_;
};

}  // namespace lp
