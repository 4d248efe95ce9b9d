// Embedding context: a llama_context created with embeddings on and a pooling type, that turns
// many tokenized inputs into one vector each (or a rank score each), several inputs per decode.
// Mirrors llama.cpp's examples/embedding (batch_decode: every input its own sequence in one
// llama_batch, all tokens output, the cache cleared before each decode, llama_get_embeddings_seq,
// common_embd_normalize) and tools/server's send_rerank (the score is the first class output).
// Not the generation Context: no decode thread of its own; each embed() runs on a task thread
// and holds the context's lock while it decodes.
#pragma once

#include <napi.h>
#include <ggml.h>
#include <llama.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lifetime.h"
#include "model.h"
#include "native-error.h"
#include "threads.h"

namespace lp {

struct EmbeddingConfig {
  uint32_t contextSize = 512;   // most tokens of one input
  uint32_t batchSize = 512;     // most tokens of one decode (>= contextSize)
  uint32_t sequences = 64;      // most inputs of one decode
  int32_t threads = 0;          // 0: physical cores
  int32_t threadsBatch = 0;     // 0: = threads
  int32_t pooling = LLAMA_POOLING_TYPE_MEAN;  // llama_pooling_type, never NONE / UNSPECIFIED
  bool shortGraph = true;       // false: llama.cpp's whole graph pools (EmbeddingCore::Pool)
};

class EmbeddingCore : public Stoppable {
 public:
  // JS thread. nullptr with *error on failure.
  static std::shared_ptr<EmbeddingCore> Create(Napi::Env env, const std::shared_ptr<ModelCore>& model,
                                               const EmbeddingConfig& config, NativeError* error);
  ~EmbeddingCore() override;

  // Any thread: makes a running decode give up (ERR_DISPOSED) and refuses later ones.
  void RequestStop() override { stop_.store(true); }

  // Task thread. `tokens` holds the inputs back to back, `lengths` their token counts (each
  // 1..contextSize, checked here too). Writes lengths.size() x dimensions floats to *out.
  // normalize: common_embd_normalize's embd_norm (-1 none, 0 max-abs int16, 1 taxicab,
  // 2 euclidean, > 2 p-norm); ignored for rank pooling. `cancelled` is polled between graph nodes.
  NativeError Run(const std::vector<llama_token>& tokens, const std::vector<uint32_t>& lengths, int32_t normalize,
                  const std::function<bool()>& cancelled, std::vector<float>* out, uint32_t* decodes, double* decodeMs,
                  uint32_t* shortDecodes);

  uint32_t contextSize() const { return contextSize_; }
  uint32_t batchSize() const { return batchSize_; }
  uint32_t sequences() const { return sequences_; }
  uint32_t dimensions() const { return dimensions_; }
  int32_t pooling() const { return pooling_; }
  int32_t threads() const { return threads_; }
  int32_t threadsBatch() const { return threadsBatch_; }
  const std::shared_ptr<ModelCore>& model() const { return model_; }

 private:
  EmbeddingCore() = default;
  static bool AbortCallback(void* data);
  // Mean, CLS and last pooling are done here, from llama.cpp's per-token output (a context with
  // pooling NONE), so that the graph can stop after the final norm: llama.cpp computes the
  // vocabulary projection (lm_head) for every token of an embedding batch and then drops it, which
  // on a decoder model is most of the work. Verified on the first decode (the norm's rows must be
  // the rows llama.cpp hands out); if not, the context is made again with llama.cpp's pooling.
  enum class Shortcut { kProbe, kSkip, kOff };
  static bool EvalCallback(ggml_tensor* t, bool ask, void* data);
  llama_context* NewContext(enum llama_pooling_type pooling, std::string* detail);
  bool ProbeMatches(int32_t rows) const;
  NativeError UseLlamaPooling();
  void Pool(int32_t firstRow, uint32_t rows, float* out) const;

  std::shared_ptr<ModelCore> model_;
  llama_context* ctx_ = nullptr;
  EmbeddingConfig config_;
  bool ownPooling_ = false;                 // Pool() runs here (ctx_ pools NONE)
  Shortcut shortcut_ = Shortcut::kOff;
  std::vector<float> probe_;                // the final norm's output in the probing decode
  int64_t probeWidth_ = 0, probeRows_ = 0;
  bool stopSeen_ = false;                   // this graph reached the node above
  uint32_t stops_ = 0;                      // graphs of this decode that did
  llama_batch batch_{};
  ThreadPools pools_;
  uint32_t contextSize_ = 0, batchSize_ = 0, sequences_ = 0, dimensions_ = 0;
  int32_t pooling_ = LLAMA_POOLING_TYPE_MEAN;
  int32_t threads_ = 1, threadsBatch_ = 1;
  std::atomic<bool> stop_{false};
  std::mutex runMu_;                                  // one Run at a time
  const std::function<bool()>* cancelled_ = nullptr;  // the running Run's, read by AbortCallback
};

// JS: new NativeEmbeddingContext(nativeModel, options); embed(tokens: Int32Array, lengths:
// Uint32Array, normalize) -> Promise<{ data: Float32Array, decodes, decodeMs, shortDecodes }>; info(); dispose().
class EmbeddingWrap : public Napi::ObjectWrap<EmbeddingWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit EmbeddingWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Embed(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  const std::shared_ptr<EmbeddingCore>& Core(Napi::Env env) const;

  std::shared_ptr<EmbeddingCore> core_;
};

}  // namespace lp
