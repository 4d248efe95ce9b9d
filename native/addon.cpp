// Module entry: registers the classes and the per-environment state. Each environment (the main
// thread, every worker_thread) gets its own AddonState; llama.cpp's backend is initialised once.
#include <napi.h>
#include <llama.h>

#include <cstdlib>
#include <mutex>

#include "addon.h"
#include "context.h"
#include "embedding.h"
#include "generation.h"
#include "lifetime.h"
#include "log.h"
#include "model.h"
#include "system.h"

namespace lp {

void StopEverythingForExit(int code) {
  ProcessStoppables().StopAll();
  if (!ProcessThreads().WaitIdle(kStopTimeout)) std::_Exit(code);
}

}  // namespace lp

namespace {

Napi::Value SystemInfo(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), llama_print_system_info());
}

// JS: stopForExit(processWide, code). From process.on("exit"): process.exit() and uncaught
// exceptions skip environment teardown and go straight to exit(), so the threads must stop first.
Napi::Value StopForExit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int code = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 0;
  if (info.Length() > 0 && info[0].ToBoolean().Value()) {
    lp::StopEverythingForExit(code);
  } else {
    // A worker's own exit: its environment is torn down next (the cleanup hook waits).
    lp::AddonState::Get(env)->stoppables->StopAll();
  }
  return env.Undefined();
}

void AtExit() { lp::StopEverythingForExit(0); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  static std::once_flag backendOnce;
  std::call_once(backendOnce, [] {
    lp::InstallLogRouter();
    lp::InitBackendRegistry();  // backends: loaded by lib/native/load.ts through backendLoad
    // Fallback when the JS exit hook did not run; it runs after statics created later than the
    // addon's load are already gone.
    std::atexit(AtExit);
  });

  auto* state = new lp::AddonState();
  state->modelCtor = Napi::Persistent(lp::ModelWrap::Define(env));
  state->contextCtor = Napi::Persistent(lp::ContextWrap::Define(env));
  state->generationCtor = Napi::Persistent(lp::GenerationWrap::Define(env));
  env.SetInstanceData<lp::AddonState>(state);
  napi_env raw = env;
  std::shared_ptr<lp::ThreadCounter> threads = state->threads;
  std::shared_ptr<lp::StopList> stoppables = state->stoppables;
  env.AddCleanupHook([raw, stoppables, threads]() {
    // Teardown: no JS runs from here on. Stop what this environment started and wait for its
    // threads, which only ever call back through thread-safe functions (gone by now).
    stoppables->StopAll();
    threads->WaitIdle(lp::kStopTimeout);
    lp::ReturnFreedMemory();  // what this environment's contexts freed (their JS timer is gone)
    lp::RemoveLoggerForEnv(raw);
  });

  exports.Set("loadModel", Napi::Function::New(env, lp::LoadModel, "loadModel"));
  exports.Set("setLogger", Napi::Function::New(env, lp::SetLogger, "setLogger"));
  exports.Set("stopForExit", Napi::Function::New(env, StopForExit, "stopForExit"));
  exports.Set("systemInfo", Napi::Function::New(env, SystemInfo, "systemInfo"));
  exports.Set("llamaCppVersion", Napi::String::New(env, llama_version()));
  exports.Set("NativeEmbeddingContext", lp::EmbeddingWrap::Define(env));
  lp::RegisterSystem(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(llamapeg, Init)
