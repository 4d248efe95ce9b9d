// Context: one llama_context plus the tokens its KV cache holds (sequence 0), wrapped for JS.
#pragma once

#include <napi.h>
#include <llama.h>

#include <atomic>
#include <memory>
#include <vector>

#include "model.h"

namespace lp {

struct GenerationJob;

struct ContextCore {
  std::shared_ptr<ModelCore> model;  // keeps the weights alive as long as this context lives
  llama_context* ctx = nullptr;
  uint32_t contextSize = 0;
  uint32_t batchSize = 0;
  int32_t threads = 1;
  uint32_t seed = LLAMA_DEFAULT_SEED;
  // Tokens whose keys/values are in the cache, in order. Touched only by the thread that holds
  // `busy` (the generation thread while one runs, else the JS thread).
  std::vector<llama_token> tokens;
  std::atomic<bool> busy{false};
  // Checked by llama.cpp between graph nodes (llama_set_abort_callback) and by the generation loop.
  std::atomic<bool> abortRequested{false};
  ~ContextCore();
};

class ContextWrap : public Napi::ObjectWrap<ContextWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, const std::shared_ptr<ModelCore>& model, Napi::Object options);
  explicit ContextWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Tokens(const Napi::CallbackInfo& info);
  Napi::Value ClearCache(const Napi::CallbackInfo& info);
  Napi::Value Generate(const Napi::CallbackInfo& info);
  const std::shared_ptr<ContextCore>& Core(Napi::Env env) const;

  std::shared_ptr<ContextCore> core_;
  std::weak_ptr<GenerationJob> current_;
};

}  // namespace lp
