#include "context.h"

#include <cstring>

#include "addon.h"
#include "common.h"
#include "generation.h"
#include "log.h"

namespace lp {

ContextCore::~ContextCore() {
  if (ctx != nullptr) llama_free(ctx);
}

namespace {

bool AbortCallback(void* data) {
  return static_cast<ContextCore*>(data)->abortRequested.load(std::memory_order_relaxed);
}

uint32_t U32(Napi::Object o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : fallback;
}

}  // namespace

Napi::Function ContextWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeContext",
                     {
                         InstanceMethod<&ContextWrap::Dispose>("dispose"),
                         InstanceMethod<&ContextWrap::Info>("info"),
                         InstanceMethod<&ContextWrap::Tokens>("tokens"),
                         InstanceMethod<&ContextWrap::ClearCache>("clearCache"),
                         InstanceMethod<&ContextWrap::Generate>("generate"),
                     });
}

Napi::Object ContextWrap::NewInstance(Napi::Env env, const std::shared_ptr<ModelCore>& model, Napi::Object o) {
  if (model->vocabOnly) Throw(env, "ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run");
  auto core = std::make_shared<ContextCore>();
  core->model = model;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = U32(o, "contextSize", 4096);
  cp.n_batch = U32(o, "batchSize", 512);
  cp.n_ubatch = cp.n_batch;
  cp.n_seq_max = 1;
  cp.n_threads = static_cast<int32_t>(U32(o, "threads", 4));
  cp.n_threads_batch = cp.n_threads;
  cp.no_perf = true;
  cp.abort_callback = AbortCallback;
  cp.abort_callback_data = core.get();
  core->seed = U32(o, "seed", LLAMA_DEFAULT_SEED);
  LogCapture capture;
  core->ctx = llama_init_from_model(model->model, cp);
  if (core->ctx == nullptr) {
    std::string detail = capture.errors();
    Throw(env, "ERR_CONTEXT_CREATE", "llama.cpp could not create the context" + (detail.empty() ? "" : ": " + detail));
  }
  core->contextSize = llama_n_ctx(core->ctx);
  core->batchSize = llama_n_batch(core->ctx);
  core->threads = cp.n_threads;
  auto* holder = new std::shared_ptr<ContextCore>(std::move(core));
  auto ext = Napi::External<std::shared_ptr<ContextCore>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<ContextCore>* p) { delete p; });
  return AddonState::Get(env)->contextCtor.New({ext});
}

ContextWrap::ContextWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ContextWrap>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeContext cannot be constructed directly; use model.createContext()");
  }
  core_ = *info[0].As<Napi::External<std::shared_ptr<ContextCore>>>().Data();
}

const std::shared_ptr<ContextCore>& ContextWrap::Core(Napi::Env env) const {
  if (!core_) Throw(env, "ERR_DISPOSED", "the context was disposed");
  return core_;
}

Napi::Value ContextWrap::Dispose(const Napi::CallbackInfo& info) {
  // A running generation stops soon (stopReason "abort"); the llama context is freed by whoever
  // drops the last reference: this wrapper, or the generation once its thread has finished.
  if (auto job = current_.lock()) job->RequestAbort();
  core_.reset();
  return info.Env().Undefined();
}

Napi::Value ContextWrap::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("contextSize", core->contextSize);
  o.Set("batchSize", core->batchSize);
  o.Set("threads", core->threads);
  return o;
}

Napi::Value ContextWrap::Tokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  if (core->busy.load()) Throw(env, "ERR_BUSY", "the context is generating; its cached tokens are changing");
  Napi::Int32Array out = Napi::Int32Array::New(env, core->tokens.size());
  if (!core->tokens.empty()) std::memcpy(out.Data(), core->tokens.data(), core->tokens.size() * sizeof(llama_token));
  return out;
}

Napi::Value ContextWrap::ClearCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  if (core->busy.load()) Throw(env, "ERR_BUSY", "the context is generating");
  llama_memory_clear(llama_get_memory(core->ctx), true);
  core->tokens.clear();
  return env.Undefined();
}

Napi::Value ContextWrap::Generate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    const auto& core = Core(env);
    if (info.Length() < 3 || !info[0].IsTypedArray() || !info[1].IsObject() || !info[2].IsFunction() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
      throw Napi::TypeError::New(env, "generate(prompt: Int32Array, options: object, onBatch: function)");
    }
    std::shared_ptr<GenerationJob> job;
    Napi::Value handle = StartGeneration(env, core, info[0].As<Napi::Int32Array>(), info[1].As<Napi::Object>(),
                                         info[2].As<Napi::Function>(), &job);
    current_ = job;
    return handle;
  });
}

}  // namespace lp
