// Per-environment addon state (one per main thread / worker_thread), registered with
// SetInstanceData so nothing is a process global freed by hand.
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>
#include <vector>

namespace lp {

struct GenerationJob;

struct AddonState {
  Napi::FunctionReference modelCtor;
  Napi::FunctionReference contextCtor;
  Napi::FunctionReference generationCtor;
  // Generations whose native thread may still run; stopped and joined on environment teardown.
  std::mutex jobsMutex;
  std::vector<std::weak_ptr<GenerationJob>> jobs;

  static AddonState* Get(Napi::Env env) { return env.GetInstanceData<AddonState>(); }
};

}  // namespace lp
