// Errors inside native/grammar (which knows nothing of Node): a stable code and a message. The
// sampler turns them into NativeError / JS errors.
#pragma once

#include <string>

namespace lp::grammar {

struct Failure {
  std::string code;  // "" = none; ERR_GRAMMAR_INVALID or ERR_GRAMMAR_DEAD_END
  std::string message;
  bool ok() const { return code.empty(); }
};

inline constexpr const char* kInvalid = "ERR_GRAMMAR_INVALID";
inline constexpr const char* kDeadEnd = "ERR_GRAMMAR_DEAD_END";

}  // namespace lp::grammar
