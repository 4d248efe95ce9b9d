#include "system.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "common.h"
#include "lifetime.h"
#include "log.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace lp {
namespace {

// A module opened only to ask it something (the CPU variant's score), closed again after.
class Library {
 public:
  explicit Library(const std::string& path) {
#ifdef _WIN32
    handle_ = LoadLibraryW(std::filesystem::u8path(path).c_str());
    if (handle_ == nullptr) {
      char buffer[512] = {0};
      FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, GetLastError(), 0, buffer,
                     sizeof buffer, nullptr);
      error_ = buffer;
    }
#else
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      error_ = e != nullptr ? e : "dlopen failed";
    }
#endif
  }
  ~Library() {
    if (handle_ == nullptr) return;
#ifdef _WIN32
    FreeLibrary(handle_);
#else
    dlclose(handle_);
#endif
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  void* Symbol(const char* name) const {
#ifdef _WIN32
    return reinterpret_cast<void*>(GetProcAddress(handle_, name));
#else
    return dlsym(handle_, name);
#endif
  }

 private:
#ifdef _WIN32
  HMODULE handle_ = nullptr;
#else
  void* handle_ = nullptr;
#endif
  std::string error_;
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// ggml registers a backend every time its file is loaded; every environment (worker threads)
// asks for the same files, so each path is loaded once per process.
std::mutex g_loadedMutex;
std::map<std::string, ggml_backend_reg_t> g_loaded;

std::string PathArg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsString()) {
    throw Napi::TypeError::New(info.Env(), std::string(fn) + "(path: string)");
  }
  return info[0].As<Napi::String>().Utf8Value();
}

Napi::Value BackendScore(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    std::string path = PathArg(info, "backendScore");
    Library lib(path);
    if (!lib.ok()) Throw(env, "ERR_NATIVE_LOAD", "cannot load " + path + ": " + Trim(lib.error()));
    using ScoreFn = int (*)();
    auto score = reinterpret_cast<ScoreFn>(lib.Symbol("ggml_backend_score"));
    if (score == nullptr) return env.Null();  // not a CPU variant: nothing to rank
    return Napi::Number::New(env, score());
  });
}

Napi::Value BackendLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    std::string path = PathArg(info, "backendLoad");
    ggml_backend_reg_t reg = nullptr;
    {
      std::lock_guard<std::mutex> lock(g_loadedMutex);
      auto it = g_loaded.find(path);
      if (it != g_loaded.end()) {
        reg = it->second;
      } else {
        LogCapture capture;
        reg = ggml_backend_load(path.c_str());
        if (reg == nullptr) {
          std::string why = Trim(capture.errors().empty() ? capture.text() : capture.errors());
          Throw(env, "ERR_NATIVE_LOAD", "cannot load backend " + path + (why.empty() ? "" : ": " + why));
        }
        g_loaded.emplace(path, reg);
      }
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("name", ggml_backend_reg_name(reg));
    out.Set("devices", Napi::Number::New(env, static_cast<double>(ggml_backend_reg_dev_count(reg))));
    return out;
  });
}

const char* TypeName(enum ggml_backend_dev_type type) {
  switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
    case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
    default: return "other";
  }
}

Napi::Value Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    size_t n = ggml_backend_dev_count();
    Napi::Array out = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++) {
      ggml_backend_dev_t dev = ggml_backend_dev_get(i);
      ggml_backend_dev_props props{};
      ggml_backend_dev_get_props(dev, &props);
      Napi::Object d = Napi::Object::New(env);
      d.Set("name", props.name != nullptr ? props.name : "");
      d.Set("description", props.description != nullptr ? props.description : "");
      d.Set("backend", ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)));
      d.Set("type", TypeName(props.type));
      d.Set("memoryFree", Napi::Number::New(env, static_cast<double>(props.memory_free)));
      d.Set("memoryTotal", Napi::Number::New(env, static_cast<double>(props.memory_total)));
      out.Set(static_cast<uint32_t>(i), d);
    }
    return out;
  });
}

}  // namespace

void InitBackendRegistry() {
  ggml_time_init();
  // ggml fills its FP16 conversion tables on the first ggml_init(); do it now, on one thread.
  ggml_init_params params{0, nullptr, false};
  ggml_free(ggml_init(params));
}

void RegisterSystem(Napi::Env env, Napi::Object exports) {
  exports.Set("backendScore", Napi::Function::New(env, BackendScore, "backendScore"));
  exports.Set("backendLoad", Napi::Function::New(env, BackendLoad, "backendLoad"));
  exports.Set("devices", Napi::Function::New(env, Devices, "devices"));
  exports.Set("returnFreedMemory", Napi::Function::New(
                                       env, [](const Napi::CallbackInfo& info) -> Napi::Value {
                                         ReturnFreedMemory();
                                         return info.Env().Undefined();
                                       },
                                       "returnFreedMemory"));
#ifdef GGML_BACKEND_DL
  exports.Set("dynamicBackends", Napi::Boolean::New(env, true));
#else
  exports.Set("dynamicBackends", Napi::Boolean::New(env, false));  // backends linked in: nothing to load
#endif
}

}  // namespace lp
