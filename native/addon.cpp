// Module entry: registers the classes and the per-environment state. Each environment (the main
// thread, every worker_thread) gets its own AddonState; llama.cpp's backend is initialised once.
#include <napi.h>
#include <llama.h>

#include <mutex>

#include "addon.h"
#include "context.h"
#include "generation.h"
#include "log.h"
#include "model.h"
#include "system.h"

namespace {

Napi::Value SystemInfo(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), llama_print_system_info());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  static std::once_flag backendOnce;
  std::call_once(backendOnce, [] {
    lp::InstallLogRouter();
    lp::InitBackendRegistry();  // backends: loaded by lib/native/load.ts through backendLoad
    lp::InstallExitHandler();
  });

  auto* state = new lp::AddonState();
  state->modelCtor = Napi::Persistent(lp::ModelWrap::Define(env));
  state->contextCtor = Napi::Persistent(lp::ContextWrap::Define(env));
  state->generationCtor = Napi::Persistent(lp::GenerationWrap::Define(env));
  env.SetInstanceData<lp::AddonState>(state);
  napi_env raw = env;
  env.AddCleanupHook([raw]() {
    Napi::Env e(raw);
    lp::StopAllGenerations(e);
    lp::RemoveLoggerForEnv(raw);
  });

  exports.Set("loadModel", Napi::Function::New(env, lp::LoadModel, "loadModel"));
  exports.Set("setLogger", Napi::Function::New(env, lp::SetLogger, "setLogger"));
  exports.Set("stopGenerationsForExit", Napi::Function::New(env, lp::StopGenerationsForExit, "stopGenerationsForExit"));
  exports.Set("systemInfo", Napi::Function::New(env, SystemInfo, "systemInfo"));
  exports.Set("llamaCppVersion", Napi::String::New(env, llama_version()));
  lp::RegisterSystem(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(llamapeg, Init)
