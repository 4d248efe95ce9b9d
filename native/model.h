// Model: a loaded llama_model shared by its contexts (shared_ptr), wrapped for JS.
#pragma once

#include <napi.h>
#include <llama.h>

#include <memory>
#include <string>
#include <vector>

#include "common.h"

#include "grammar/vocab-index.h"

struct gguf_context;

namespace lp {

struct ModelCore {
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
  gguf_context* gguf = nullptr;  // metadata only (no tensor data), read before llama.cpp loads
  std::string path;
  bool vocabOnly = false;
  grammar::VocabIndexHolder grammarIndex;  // the vocabulary trie of grammar samplers, built at first use
  ~ModelCore();
};

class ModelWrap : public Napi::ObjectWrap<ModelWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<ModelCore> core);
  explicit ModelWrap(const Napi::CallbackInfo& info);

  // Throws ERR_DISPOSED when the model was disposed.
  const std::shared_ptr<ModelCore>& Core(Napi::Env env) const;

 private:
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Metadata(const Napi::CallbackInfo& info);
  Napi::Value ChatTemplate(const Napi::CallbackInfo& info);
  Napi::Value Tokenize(const Napi::CallbackInfo& info);
  Napi::Value TokenizeAsync(const Napi::CallbackInfo& info);
  Napi::Value TokenPiece(const Napi::CallbackInfo& info);
  Napi::Value Detokenize(const Napi::CallbackInfo& info);
  Napi::Value IsEog(const Napi::CallbackInfo& info);
  Napi::Value IsControl(const Napi::CallbackInfo& info);
  Napi::Value TokenAttributes(const Napi::CallbackInfo& info);
  Napi::Value CreateContext(const Napi::CallbackInfo& info);

  std::shared_ptr<ModelCore> core_;
};

// JS: loadModel(path, {gpuLayers, useMmap, vocabOnly}, onProgress?) -> Promise<NativeModel>, off the JS thread
Napi::Value LoadModel(const Napi::CallbackInfo& info);

// Tokenizes `text` into *out (any thread).
NativeError TokenizeText(const llama_vocab* vocab, const std::string& text, bool addSpecial, bool parseSpecial,
                         std::vector<llama_token>* out);

// Renders one token into bytes (may be part of a UTF-8 character).
std::string TokenToPiece(const llama_vocab* vocab, llama_token token, bool special);

}  // namespace lp
