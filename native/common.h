// Shared helpers for the addon: errors that carry a stable `code`, and the per-environment state.
#pragma once

#include <napi.h>

#include <string>

#include "native-error.h"

namespace lp {

// NativeError (native-error.h): an error produced off the JS thread; becomes a JS Error with
// `code` on the JS thread.

inline Napi::Error MakeError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Value().Set("code", Napi::String::New(env, code));
  return error;
}

[[noreturn]] inline void Throw(Napi::Env env, const std::string& code, const std::string& message) {
  throw MakeError(env, code, message);
}

// Runs `fn`, turning any C++ exception that is not already a JS error into one with `code`
// ERR_INTERNAL, so no exception ever unwinds into Node.
template <typename Fn>
auto Guard(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw MakeError(env, "ERR_INTERNAL", std::string("native error: ") + e.what());
  } catch (...) {
    throw MakeError(env, "ERR_INTERNAL", "native error: unknown exception");
  }
}

}  // namespace lp
