#include "log.h"

#include <llama.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "common.h"

namespace lp {
namespace {

struct LogLine {
  int level;
  std::string text;
};

struct LogSink;
void CallLogger(Napi::Env env, Napi::Function fn, std::weak_ptr<LogSink>*, LogLine* line);
using LoggerTsfn = Napi::TypedThreadSafeFunction<std::weak_ptr<LogSink>, LogLine, CallLogger>;

struct LogSink {
  napi_env env;
  LoggerTsfn tsfn;
  int minLevel;
  bool released = false;  // under g_sinksMutex: the function was released or finalized
};

// Process-wide by nature (llama_log_set is); a static that is never freed by hand.
std::mutex g_sinksMutex;
std::vector<std::shared_ptr<LogSink>> g_sinks;
thread_local LogCapture* t_capture = nullptr;
thread_local int t_lastLevel = GGML_LOG_LEVEL_INFO;

const char* LevelName(int level) {
  switch (level) {
    case GGML_LOG_LEVEL_DEBUG: return "debug";
    case GGML_LOG_LEVEL_INFO: return "info";
    case GGML_LOG_LEVEL_WARN: return "warn";
    case GGML_LOG_LEVEL_ERROR: return "error";
    default: return "info";
  }
}

int LevelFromName(const std::string& name) {
  if (name == "debug") return GGML_LOG_LEVEL_DEBUG;
  if (name == "info") return GGML_LOG_LEVEL_INFO;
  if (name == "warn") return GGML_LOG_LEVEL_WARN;
  return GGML_LOG_LEVEL_ERROR;
}

void CallLogger(Napi::Env env, Napi::Function fn, std::weak_ptr<LogSink>*, LogLine* line) {
  std::unique_ptr<LogLine> owned(line);
  if (env == nullptr || fn.IsEmpty()) return;
  try {
    fn.Call({Napi::String::New(env, LevelName(owned->level)), Napi::String::New(env, owned->text)});
  } catch (...) {
    // A throwing user logger must not take the process down; drop the line.
  }
}

void OnLog(ggml_log_level level, const char* text, void*) {
  int effective = level == GGML_LOG_LEVEL_CONT ? t_lastLevel : level;
  if (level != GGML_LOG_LEVEL_CONT) t_lastLevel = level;
  if (text == nullptr) return;
  if (t_capture != nullptr) t_capture->Append(effective, text);
  std::lock_guard<std::mutex> lock(g_sinksMutex);
  for (auto& sink : g_sinks) {
    if (sink->released || effective < sink->minLevel) continue;
    auto* line = new LogLine{effective, text};
    if (sink->tsfn.NonBlockingCall(line) != napi_ok) delete line;
  }
}

}  // namespace

void InstallLogRouter() {
  static std::once_flag once;
  std::call_once(once, [] { llama_log_set(OnLog, nullptr); });
}

LogCapture::LogCapture() : previous_(t_capture) { t_capture = this; }
LogCapture::~LogCapture() { t_capture = previous_; }

void LogCapture::Append(int level, const char* text) {
  text_ += text;
  if (level >= GGML_LOG_LEVEL_ERROR) errors_ += text;
}

std::string LogCapture::errors() const {
  std::string out = errors_;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

void RemoveLoggerForEnv(napi_env env) {
  std::lock_guard<std::mutex> lock(g_sinksMutex);
  auto it = std::remove_if(g_sinks.begin(), g_sinks.end(), [&](const std::shared_ptr<LogSink>& s) {
    if (s->env != env) return false;
    if (!s->released) s->tsfn.Release();
    s->released = true;
    return true;
  });
  g_sinks.erase(it, g_sinks.end());
}

Napi::Value SetLogger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RemoveLoggerForEnv(env);
  if (info.Length() < 1 || !info[0].IsFunction()) return env.Undefined();
  std::string levelName = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "warn";
  auto sink = std::make_shared<LogSink>();
  sink->env = env;
  sink->minLevel = LevelFromName(levelName);
  // Node deletes the function at environment teardown, before our cleanup hook runs: from its
  // finalizer on, no thread may call it.
  auto* weak = new std::weak_ptr<LogSink>(sink);
  sink->tsfn = LoggerTsfn::New(env, info[0].As<Napi::Function>(), "llamapeg.log", 0, 1, weak,
                               [](Napi::Env, void*, std::weak_ptr<LogSink>* w) {
                                 if (auto s = w->lock()) {
                                   std::lock_guard<std::mutex> lock(g_sinksMutex);
                                   s->released = true;
                                 }
                                 delete w;
                               },
                               static_cast<void*>(nullptr));
  // A logger must not keep the process alive on its own.
  sink->tsfn.Unref(env);
  std::lock_guard<std::mutex> lock(g_sinksMutex);
  g_sinks.push_back(std::move(sink));
  return env.Undefined();
}

}  // namespace lp
