// An error produced off the JS thread (code + message), with no Node dependency: native code that
// test programs also build (the sampler) reports with it; common.h turns it into a JS Error.
#pragma once

#include <string>

namespace lp {

struct NativeError {
  std::string code;     // "" = no error
  std::string message;
  bool ok() const { return code.empty(); }
};

}  // namespace lp
