// Per-environment addon state (one per main thread / worker_thread), registered with
// SetInstanceData so nothing is a process global freed by hand.
#pragma once

#include <napi.h>

#include <memory>

#include "lifetime.h"

namespace lp {

struct AddonState {
  Napi::FunctionReference modelCtor;
  Napi::FunctionReference contextCtor;
  Napi::FunctionReference generationCtor;
  // Native work started from this environment: stopped, and waited for, when it is torn down
  // (worker.terminate(), the end of a worker), because the addon may be unloaded with it.
  std::shared_ptr<StopList> stoppables = std::make_shared<StopList>();
  std::shared_ptr<ThreadCounter> threads = std::make_shared<ThreadCounter>();

  static AddonState* Get(Napi::Env env) { return env.GetInstanceData<AddonState>(); }
};

// Process exit: stops every context and task of the process and waits for their threads
// (kStopTimeout). Threads that do not stop in time are abandoned with a quick exit (std::_Exit),
// since exit() would destroy llama.cpp's statics under them.
void StopEverythingForExit(int code);

}  // namespace lp
