// llama.cpp's log is one process-wide callback. We install it once and route each line:
//  - to the capture buffer of the calling thread, if that thread opened a LogCapture (so a failed
//    load or grammar parse can report llama.cpp's own words), and
//  - to every environment that set a logger (setLogger), at or above its level. Quiet otherwise.
#pragma once

#include <napi.h>

#include <string>

namespace lp {

void InstallLogRouter();

// RAII: while alive, log lines emitted on this thread are appended to text().
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  const std::string& text() const { return text_; }
  // The lines at error level only, trimmed (what usually explains a failure).
  std::string errors() const;
  void Append(int level, const char* text);

 private:
  LogCapture* previous_;
  std::string text_;
  std::string errors_;
};

// JS: setLogger(fn | null, minLevel) for this environment. fn(level: string, text: string).
Napi::Value SetLogger(const Napi::CallbackInfo& info);
void RemoveLoggerForEnv(napi_env env);

}  // namespace lp
