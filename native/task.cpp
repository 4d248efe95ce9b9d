#include "task.h"

#include "addon.h"
#include "common.h"

namespace lp {

namespace {
int kProgress = 0;
int kDone = 1;
}  // namespace

// Lives as long as the thread-safe function: owns the task and the (JS-thread-only) deferred.
struct Task::Holder {
  std::shared_ptr<Task> task;
  Napi::Promise::Deferred deferred;
  bool settled = false;
};

void Task::CallJs(Napi::Env env, Napi::Function fn, Holder* holder, int* kind) {
  // env is null when the function is torn down with the environment: nothing to call.
  if (env == nullptr || holder == nullptr || kind == nullptr) return;
  try {
    Napi::HandleScope scope(env);
    if (kind == &kProgress) {
      holder->task->progressPending_.store(false);
      if (!holder->settled && !fn.IsEmpty()) holder->task->OnProgress(env, fn);
      return;
    }
    if (holder->settled) return;
    holder->settled = true;
    try {
      holder->task->Settle(env, holder->deferred);
    } catch (const Napi::Error& e) {
      holder->deferred.Reject(e.Value());
    } catch (const std::exception& e) {
      holder->deferred.Reject(MakeError(env, "ERR_INTERNAL", std::string("native error: ") + e.what()).Value());
    }
  } catch (...) {
    // JS can no longer run here (the environment is going away): the promise stays pending.
  }
}

Napi::Promise Task::Start(Napi::Env env, const std::shared_ptr<Task>& task, const char* name, Napi::Function onProgress) {
  auto* holder = new Holder{task, Napi::Promise::Deferred::New(env)};
  Napi::Promise promise = holder->deferred.Promise();
  // JS thread, when the function goes (after the result, or at environment teardown).
  auto finalize = [](Napi::Env, void*, Holder* h) {
    {
      std::lock_guard<std::mutex> lock(h->task->tsfnMu_);
      h->task->tsfnGone_ = true;
    }
    delete h;
  };
  try {
    if (onProgress.IsEmpty()) {
      task->tsfn_ = Tsfn::New(env, name, 0, 1, holder, finalize);
    } else {
      task->tsfn_ = Tsfn::New(env, onProgress, name, 0, 1, holder, finalize, static_cast<void*>(nullptr));
    }
  } catch (...) {
    delete holder;
    throw;
  }
  AddonState* state = AddonState::Get(env);
  state->stoppables->Add(task);
  ProcessStoppables().Add(task);
  try {
    StartCountedThread(state->threads, [task] {
      try {
        task->Execute();
      } catch (...) {
        // Execute reports failures through its own fields; a stray exception still settles.
      }
      std::lock_guard<std::mutex> lock(task->tsfnMu_);
      if (!task->tsfnGone_) {
        task->tsfn_.NonBlockingCall(&kDone);
        task->tsfn_.Release();
      }
    });
  } catch (const std::exception& e) {
    task->tsfn_.Release();
    Throw(env, "ERR_INTERNAL", std::string("could not start a thread: ") + e.what());
  }
  return promise;
}

void Task::Progress() {
  if (progressPending_.exchange(true)) return;
  if (!Call(&kProgress)) progressPending_.store(false);
}

bool Task::Call(int* kind) {
  std::lock_guard<std::mutex> lock(tsfnMu_);
  return !tsfnGone_ && tsfn_.NonBlockingCall(kind) == napi_ok;
}

}  // namespace lp
