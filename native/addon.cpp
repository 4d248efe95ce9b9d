#include <napi.h>

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::String::New(env, "stub"));
  return exports;
}

NODE_API_MODULE(llamapeg, Init)
