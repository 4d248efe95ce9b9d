#include "model.h"

#include <gguf.h>

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "addon.h"
#include "common.h"
#include "context.h"
#include "lifetime.h"
#include "log.h"
#include "rpc.h"
#include "task.h"

namespace lp {

ModelCore::~ModelCore() {
  if (model != nullptr) llama_model_free(model);
  if (gguf != nullptr) gguf_free(gguf);
  ReturnFreedMemory();
}

std::string TokenToPiece(const llama_vocab* vocab, llama_token token, bool special) {
  char small[128];
  int32_t n = llama_token_to_piece(vocab, token, small, sizeof(small), 0, special);
  if (n >= 0) return std::string(small, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(-n), '\0');
  n = llama_token_to_piece(vocab, token, big.data(), static_cast<int32_t>(big.size()), 0, special);
  big.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return big;
}

// ---------------------------------------------------------------------------------------------
// Loading (off the JS thread)

namespace {

struct LoadParams {
  std::string path;
  int32_t gpuLayers = 0;
  bool useMmap = true;
  bool vocabOnly = false;
  std::vector<std::string> rpcServers;  // "host:port" of ggml rpc-servers (checked by the JS side)
  // ggml device names to place the model on (load.ts's backend choice); unset: every loaded device
  bool hasDevices = false;
  std::vector<std::string> devices;
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

NativeError ClassifyLoadFailure(const std::string& path, const std::string& log) {
  std::string detail = Trim(log);
  if (detail.size() > 2000) detail = "..." + detail.substr(detail.size() - 2000);
  std::string suffix = detail.empty() ? "" : ": " + detail;
  if (log.find("unknown model architecture") != std::string::npos) {
    return {"ERR_MODEL_UNSUPPORTED", "unsupported model architecture in " + path + suffix};
  }
  if (log.find("not within the file bounds") != std::string::npos || log.find("corrupted") != std::string::npos ||
      log.find("failed to read") != std::string::npos) {
    return {"ERR_MODEL_CORRUPT", "model file is corrupt or truncated: " + path + suffix};
  }
  return {"ERR_MODEL_LOAD", "llama.cpp could not load " + path + suffix};
}

// Checks what we can before llama.cpp sees the file: it exists, is a GGUF, its header parses and
// its tensor data fits in the file. Leaves the parsed header (metadata) in *out.
NativeError PrecheckFile(const LoadParams& p, gguf_context** out) {
  struct stat st {};
  if (stat(p.path.c_str(), &st) != 0) return {"ERR_MODEL_NOT_FOUND", "model file not found: " + p.path};
  if (!S_ISREG(st.st_mode)) return {"ERR_MODEL_NOT_FOUND", "model path is not a regular file: " + p.path};
  FILE* f = std::fopen(p.path.c_str(), "rb");
  if (f == nullptr) return {"ERR_MODEL_NOT_FOUND", "model file cannot be opened: " + p.path + " (" + std::strerror(errno) + ")"};
  char magic[4] = {0, 0, 0, 0};
  size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  if (n < 4 || std::memcmp(magic, "GGUF", 4) != 0) {
    return {"ERR_MODEL_NOT_GGUF", "not a GGUF file (no 'GGUF' magic at offset 0): " + p.path};
  }
  LogCapture capture;
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* gguf = gguf_init_from_file(p.path.c_str(), params);
  if (gguf == nullptr) {
    std::string detail = Trim(capture.text());
    return {"ERR_MODEL_CORRUPT", "GGUF header is corrupt or truncated: " + p.path + (detail.empty() ? "" : ": " + detail)};
  }
  if (!p.vocabOnly) {
    uint64_t needed = gguf_get_data_offset(gguf);
    for (int64_t i = 0; i < gguf_get_n_tensors(gguf); i++) {
      uint64_t end = gguf_get_data_offset(gguf) + gguf_get_tensor_offset(gguf, i) + gguf_get_tensor_size(gguf, i);
      if (end > needed) needed = end;
    }
    if (static_cast<uint64_t>(st.st_size) < needed) {
      gguf_free(gguf);
      return {"ERR_MODEL_CORRUPT", "model file is truncated: " + p.path + " has " + std::to_string(st.st_size) +
                                       " bytes, its tensors need " + std::to_string(needed)};
    }
  }
  *out = gguf;
  return {};
}

// Loads on its own thread (task.h). Stopping it (environment teardown, process exit) makes
// llama.cpp's progress callback return false, which cancels the load between tensors.
class LoadTask : public Task {
 public:
  explicit LoadTask(LoadParams params) : params_(std::move(params)) {}

  void Execute() override {
    try {
      gguf_context* gguf = nullptr;
      error_ = PrecheckFile(params_, &gguf);
      if (!error_.ok()) return;
      auto core = std::make_shared<ModelCore>();
      core->gguf = gguf;
      core->path = params_.path;
      core->vocabOnly = params_.vocabOnly;

      llama_model_params mp = llama_model_default_params();
      mp.n_gpu_layers = params_.gpuLayers;
      mp.vocab_only = params_.vocabOnly;
      if (!params_.useMmap) mp.load_mode = LLAMA_LOAD_MODE_NONE;
      // RPC devices first (llama.cpp's --rpc order), then the backend choice's devices, or without
      // one the local GPUs llama.cpp would pick.
      std::vector<ggml_backend_dev_t> devices;
      if (!params_.rpcServers.empty()) {
        error_ = RpcDevices(params_.rpcServers, !params_.hasDevices, &devices);
        if (!error_.ok()) {
          core_.reset();
          return;
        }
      }
      if (params_.hasDevices) {
        for (const std::string& name : params_.devices) {
          ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
          if (dev == nullptr) {
            error_ = {"ERR_INVALID_ARGUMENT", "no loaded device is named " + name};
            core_.reset();
            return;
          }
          devices.push_back(dev);
        }
      }
      if (params_.hasDevices || !params_.rpcServers.empty()) {
        devices.push_back(nullptr);
        mp.devices = devices.data();
      }
      mp.progress_callback = [](float value, void* ud) {
        auto* self = static_cast<LoadTask*>(ud);
        self->progress_.store(value);
        self->Progress();
        return !self->StopRequested();
      };
      mp.progress_callback_user_data = this;

      LogCapture capture;
      llama_model* model = llama_model_load_from_file(params_.path.c_str(), mp);
      if (model == nullptr) {
        if (StopRequested()) {
          error_ = {"ERR_MODEL_LOAD", "loading " + params_.path + " was cancelled"};
        } else {
          error_ = ClassifyLoadFailure(params_.path, capture.errors().empty() ? capture.text() : capture.errors());
        }
        return;
      }
      core->model = model;
      core->vocab = llama_model_get_vocab(model);
      core_ = std::move(core);
    } catch (const std::exception& e) {
      error_ = {"ERR_MODEL_LOAD", std::string("loading ") + params_.path + " failed: " + e.what()};
      core_.reset();
    } catch (...) {
      error_ = {"ERR_MODEL_LOAD", "loading " + params_.path + " failed: unknown exception"};
      core_.reset();
    }
  }

  void OnProgress(Napi::Env env, Napi::Function callback) override {
    try {
      callback.Call({Napi::Number::New(env, progress_.load())});
    } catch (...) {
      // A throwing progress callback does not stop the load.
    }
  }

  void Settle(Napi::Env env, Napi::Promise::Deferred& deferred) override {
    if (!error_.ok()) {
      deferred.Reject(MakeError(env, error_.code, error_.message).Value());
      return;
    }
    deferred.Resolve(ModelWrap::NewInstance(env, std::move(core_)));
  }

 private:
  LoadParams params_;
  std::atomic<float> progress_{0};
  NativeError error_;
  std::shared_ptr<ModelCore> core_;
};

// Tokenizes on its own thread: a megabyte of prompt costs a few hundred milliseconds.
class TokenizeTask : public Task {
 public:
  TokenizeTask(std::shared_ptr<ModelCore> model, std::string text, bool addSpecial, bool parseSpecial)
      : model_(std::move(model)), text_(std::move(text)), addSpecial_(addSpecial), parseSpecial_(parseSpecial) {}
  void Execute() override { error_ = TokenizeText(model_->vocab, text_, addSpecial_, parseSpecial_, &tokens_); }
  void Settle(Napi::Env env, Napi::Promise::Deferred& deferred) override {
    model_.reset();
    if (!error_.ok()) {
      deferred.Reject(MakeError(env, error_.code, error_.message).Value());
      return;
    }
    Napi::Int32Array out = Napi::Int32Array::New(env, tokens_.size());
    if (!tokens_.empty()) std::memcpy(out.Data(), tokens_.data(), tokens_.size() * sizeof(llama_token));
    deferred.Resolve(out);
  }

 private:
  std::shared_ptr<ModelCore> model_;
  std::string text_;
  bool addSpecial_;
  bool parseSpecial_;
  NativeError error_;
  std::vector<llama_token> tokens_;
};

}  // namespace

NativeError TokenizeText(const llama_vocab* vocab, const std::string& text, bool addSpecial, bool parseSpecial,
                         std::vector<llama_token>* out) {
  if (text.size() > static_cast<size_t>(INT32_MAX) - 8) return {"ERR_INVALID_ARGUMENT", "text is too long to tokenize"};
  out->assign(text.size() + 4, 0);
  int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out->data(),
                             static_cast<int32_t>(out->size()), addSpecial, parseSpecial);
  if (n == INT32_MIN) return {"ERR_INVALID_ARGUMENT", "tokenization overflowed"};
  if (n < 0) {
    out->assign(static_cast<size_t>(-n), 0);
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out->data(),
                       static_cast<int32_t>(out->size()), addSpecial, parseSpecial);
    if (n < 0) return {"ERR_INTERNAL", "tokenization failed"};
  }
  out->resize(static_cast<size_t>(n));
  return {};
}

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsObject()) {
      throw Napi::TypeError::New(env, "loadModel(path: string, options: object, onProgress?: function)");
    }
    LoadParams p;
    p.path = info[0].As<Napi::String>().Utf8Value();
    Napi::Object o = info[1].As<Napi::Object>();
    p.gpuLayers = o.Get("gpuLayers").As<Napi::Number>().Int32Value();
    p.useMmap = o.Get("useMmap").As<Napi::Boolean>().Value();
    p.vocabOnly = o.Get("vocabOnly").As<Napi::Boolean>().Value();
    Napi::Value rpc = o.Get("rpcServers");
    if (rpc.IsArray()) {
      Napi::Array a = rpc.As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); i++) p.rpcServers.push_back(a.Get(i).ToString().Utf8Value());
    }
    Napi::Value devices = o.Get("devices");
    if (devices.IsArray()) {
      Napi::Array list = devices.As<Napi::Array>();
      p.hasDevices = true;
      for (uint32_t i = 0; i < list.Length(); i++) p.devices.push_back(list.Get(i).ToString().Utf8Value());
    }
    Napi::Function onProgress;
    if (info.Length() > 2 && info[2].IsFunction()) onProgress = info[2].As<Napi::Function>();
    return Task::Start(env, std::make_shared<LoadTask>(std::move(p)), "llamapeg.loadModel", onProgress);
  });
}

// ---------------------------------------------------------------------------------------------
// The JS object

Napi::Function ModelWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeModel",
                     {
                         InstanceMethod<&ModelWrap::Dispose>("dispose"),
                         InstanceMethod<&ModelWrap::Info>("info"),
                         InstanceMethod<&ModelWrap::Metadata>("metadata"),
                         InstanceMethod<&ModelWrap::ChatTemplate>("chatTemplate"),
                         InstanceMethod<&ModelWrap::Tokenize>("tokenize"),
                         InstanceMethod<&ModelWrap::TokenizeAsync>("tokenizeAsync"),
                         InstanceMethod<&ModelWrap::TokenPiece>("tokenPiece"),
                         InstanceMethod<&ModelWrap::Detokenize>("detokenize"),
                         InstanceMethod<&ModelWrap::IsEog>("isEog"),
                         InstanceMethod<&ModelWrap::IsControl>("isControl"),
                         InstanceMethod<&ModelWrap::TokenAttributes>("tokenAttributes"),
                         InstanceMethod<&ModelWrap::CreateContext>("createContext"),
                     });
}

Napi::Object ModelWrap::NewInstance(Napi::Env env, std::shared_ptr<ModelCore> core) {
  // The constructor is not callable from JS with a core; pass it through an External.
  auto* holder = new std::shared_ptr<ModelCore>(std::move(core));
  Napi::External<std::shared_ptr<ModelCore>> ext = Napi::External<std::shared_ptr<ModelCore>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<ModelCore>* p) { delete p; });
  return AddonState::Get(env)->modelCtor.New({ext});
}

ModelWrap::ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeModel cannot be constructed directly; use loadModel()");
  }
  // Move the reference out: the External lives until the next GC, and a copy left in it would
  // keep the weights alive after dispose().
  core_ = std::move(*info[0].As<Napi::External<std::shared_ptr<ModelCore>>>().Data());
}

const std::shared_ptr<ModelCore>& ModelWrap::Core(Napi::Env env) const {
  if (!core_) Throw(env, "ERR_DISPOSED", "the model was disposed");
  return core_;
}

Napi::Value ModelWrap::Dispose(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference; the weights are freed when the last one goes.
  core_.reset();
  return info.Env().Undefined();
}

static llama_token TokenArg(const Napi::CallbackInfo& info, size_t i, const llama_vocab* vocab) {
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "token id must be a number");
  int64_t id = info[i].As<Napi::Number>().Int64Value();
  if (id < 0 || id >= llama_vocab_n_tokens(vocab)) {
    throw Napi::RangeError::New(info.Env(), "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                                std::to_string(llama_vocab_n_tokens(vocab) - 1) + ")");
  }
  return static_cast<llama_token>(id);
}

Napi::Value ModelWrap::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  const llama_vocab* v = core->vocab;
  Napi::Object o = Napi::Object::New(env);
  o.Set("vocabSize", llama_vocab_n_tokens(v));
  o.Set("bos", llama_vocab_bos(v));
  o.Set("eos", llama_vocab_eos(v));
  o.Set("eot", llama_vocab_eot(v));
  o.Set("nl", llama_vocab_nl(v));
  o.Set("addBos", llama_vocab_get_add_bos(v));
  o.Set("addEos", llama_vocab_get_add_eos(v));
  o.Set("vocabOnly", core->vocabOnly);
  o.Set("trainContextSize", llama_model_n_ctx_train(core->model));
  o.Set("embeddingSize", llama_model_n_embd(core->model));
  o.Set("layers", llama_model_n_layer(core->model));
  o.Set("parameters", static_cast<double>(llama_model_n_params(core->model)));
  o.Set("sizeBytes", static_cast<double>(llama_model_size(core->model)));
  char desc[256];
  llama_model_desc(core->model, desc, sizeof(desc));
  o.Set("description", desc);
  return o;
}

static size_t GgufScalarSize(gguf_type type) {
  switch (type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
  }
}

static Napi::Value GgufScalar(Napi::Env env, gguf_type type, const void* data) {
  switch (type) {
    case GGUF_TYPE_UINT8: return Napi::Number::New(env, *static_cast<const uint8_t*>(data));
    case GGUF_TYPE_INT8: return Napi::Number::New(env, *static_cast<const int8_t*>(data));
    case GGUF_TYPE_UINT16: return Napi::Number::New(env, *static_cast<const uint16_t*>(data));
    case GGUF_TYPE_INT16: return Napi::Number::New(env, *static_cast<const int16_t*>(data));
    case GGUF_TYPE_UINT32: return Napi::Number::New(env, *static_cast<const uint32_t*>(data));
    case GGUF_TYPE_INT32: return Napi::Number::New(env, *static_cast<const int32_t*>(data));
    case GGUF_TYPE_FLOAT32: return Napi::Number::New(env, *static_cast<const float*>(data));
    case GGUF_TYPE_UINT64: return Napi::Number::New(env, static_cast<double>(*static_cast<const uint64_t*>(data)));
    case GGUF_TYPE_INT64: return Napi::Number::New(env, static_cast<double>(*static_cast<const int64_t*>(data)));
    case GGUF_TYPE_FLOAT64: return Napi::Number::New(env, *static_cast<const double*>(data));
    case GGUF_TYPE_BOOL: return Napi::Boolean::New(env, *static_cast<const int8_t*>(data) != 0);
    default: return env.Null();
  }
}

Napi::Value ModelWrap::Metadata(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  const gguf_context* g = core->gguf;
  Napi::Object out = Napi::Object::New(env);
  for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
    const char* key = gguf_get_key(g, i);
    gguf_type type = gguf_get_kv_type(g, i);
    if (type == GGUF_TYPE_STRING) {
      out.Set(key, Napi::String::New(env, gguf_get_val_str(g, i)));
    } else if (type == GGUF_TYPE_ARRAY) {
      gguf_type at = gguf_get_arr_type(g, i);
      size_t n = gguf_get_arr_n(g, i);
      Napi::Array arr = Napi::Array::New(env, n);
      if (at == GGUF_TYPE_STRING) {
        for (size_t j = 0; j < n; j++) arr.Set(static_cast<uint32_t>(j), Napi::String::New(env, gguf_get_arr_str(g, i, j)));
      } else if (GgufScalarSize(at) > 0) {
        const char* data = static_cast<const char*>(gguf_get_arr_data(g, i));
        size_t size = GgufScalarSize(at);
        for (size_t j = 0; j < n; j++) arr.Set(static_cast<uint32_t>(j), GgufScalar(env, at, data + j * size));
      }
      out.Set(key, arr);
    } else {
      out.Set(key, GgufScalar(env, type, gguf_get_val_data(g, i)));
    }
  }
  return out;
}

Napi::Value ModelWrap::ChatTemplate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  std::string name;
  bool named = info.Length() > 0 && info[0].IsString();
  if (named) name = info[0].As<Napi::String>().Utf8Value();
  const char* tmpl = llama_model_chat_template(core->model, named ? name.c_str() : nullptr);
  if (tmpl == nullptr) return env.Null();
  return Napi::String::New(env, tmpl);
}

Napi::Value ModelWrap::Tokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  if (info.Length() < 3 || !info[0].IsString()) throw Napi::TypeError::New(env, "tokenize(text, addSpecial, parseSpecial)");
  std::string text = info[0].As<Napi::String>().Utf8Value();
  std::vector<llama_token> tokens;
  NativeError err = TokenizeText(core->vocab, text, info[1].ToBoolean().Value(), info[2].ToBoolean().Value(), &tokens);
  if (!err.ok()) Throw(env, err.code, err.message);
  Napi::Int32Array out = Napi::Int32Array::New(env, tokens.size());
  if (!tokens.empty()) std::memcpy(out.Data(), tokens.data(), tokens.size() * sizeof(llama_token));
  return out;
}

Napi::Value ModelWrap::TokenizeAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    const auto& core = Core(env);
    if (info.Length() < 3 || !info[0].IsString()) throw Napi::TypeError::New(env, "tokenizeAsync(text, addSpecial, parseSpecial)");
    auto task = std::make_shared<TokenizeTask>(core, info[0].As<Napi::String>().Utf8Value(), info[1].ToBoolean().Value(),
                                               info[2].ToBoolean().Value());
    return Task::Start(env, task, "llamapeg.tokenize");
  });
}

Napi::Value ModelWrap::TokenPiece(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  llama_token id = TokenArg(info, 0, core->vocab);
  bool special = info.Length() > 1 && info[1].ToBoolean().Value();
  std::string piece = TokenToPiece(core->vocab, id, special);
  Napi::Uint8Array out = Napi::Uint8Array::New(env, piece.size());
  std::memcpy(out.Data(), piece.data(), piece.size());
  return out;
}

Napi::Value ModelWrap::Detokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    throw Napi::TypeError::New(env, "detokenize(tokens: Int32Array, special)");
  }
  Napi::Int32Array ids = info[0].As<Napi::Int32Array>();
  bool special = info.Length() > 1 && info[1].ToBoolean().Value();
  int32_t nVocab = llama_vocab_n_tokens(core->vocab);
  for (size_t i = 0; i < ids.ElementLength(); i++) {
    if (ids[i] < 0 || ids[i] >= nVocab) {
      throw Napi::RangeError::New(env, "tokens[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is outside the vocabulary");
    }
  }
  std::string text(ids.ElementLength() * 8 + 16, '\0');
  int32_t n = llama_detokenize(core->vocab, ids.Data(), static_cast<int32_t>(ids.ElementLength()), text.data(),
                               static_cast<int32_t>(text.size()), false, special);
  if (n < 0) {
    text.resize(static_cast<size_t>(-n));
    n = llama_detokenize(core->vocab, ids.Data(), static_cast<int32_t>(ids.ElementLength()), text.data(),
                         static_cast<int32_t>(text.size()), false, special);
    if (n < 0) Throw(env, "ERR_INTERNAL", "detokenization failed");
  }
  text.resize(static_cast<size_t>(n));
  return Napi::String::New(env, text);
}

Napi::Value ModelWrap::IsEog(const Napi::CallbackInfo& info) {
  const auto& core = Core(info.Env());
  return Napi::Boolean::New(info.Env(), llama_vocab_is_eog(core->vocab, TokenArg(info, 0, core->vocab)));
}

Napi::Value ModelWrap::IsControl(const Napi::CallbackInfo& info) {
  const auto& core = Core(info.Env());
  return Napi::Boolean::New(info.Env(), llama_vocab_is_control(core->vocab, TokenArg(info, 0, core->vocab)));
}

Napi::Value ModelWrap::TokenAttributes(const Napi::CallbackInfo& info) {
  const auto& core = Core(info.Env());
  return Napi::Number::New(info.Env(), llama_vocab_get_attr(core->vocab, TokenArg(info, 0, core->vocab)));
}

Napi::Value ModelWrap::CreateContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    const auto& core = Core(env);
    if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "createContext(options: object)");
    return ContextWrap::NewInstance(env, core, info[0].As<Napi::Object>());
  });
}

}  // namespace lp
