#include "embedding.h"

#include <ggml-backend.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "addon.h"
#include "common.h"
#include "log.h"
#include "task.h"

namespace lp {

namespace {

// common_embd_normalize (common/common.cpp): the same sums in double, the same float scale.
void Normalize(const float* in, float* out, uint32_t n, int32_t norm) {
  double sum = 0.0;
  if (norm == -1) {
    sum = 1.0;
  } else if (norm == 0) {
    for (uint32_t i = 0; i < n; i++) sum = std::max(sum, static_cast<double>(std::abs(in[i])));
    sum /= 32760.0;  // an int16 range
  } else if (norm == 2) {
    for (uint32_t i = 0; i < n; i++) sum += in[i] * in[i];
    sum = std::sqrt(sum);
  } else {
    for (uint32_t i = 0; i < n; i++) sum += std::pow(std::abs(in[i]), norm);
    sum = std::pow(sum, 1.0 / norm);
  }
  const float scale = sum > 0.0 ? 1.0 / sum : 0.0f;
  for (uint32_t i = 0; i < n; i++) out[i] = in[i] * scale;
}

}  // namespace

std::shared_ptr<EmbeddingCore> EmbeddingCore::Create(Napi::Env env, const std::shared_ptr<ModelCore>& model,
                                                     const EmbeddingConfig& config, NativeError* error) {
  if (llama_model_has_encoder(model->model) && llama_model_has_decoder(model->model)) {
    *error = {"ERR_MODEL_UNSUPPORTED", "embeddings of encoder-decoder models are not supported (as in llama.cpp)"};
    return nullptr;
  }
  if (config.pooling <= LLAMA_POOLING_TYPE_NONE || config.pooling > LLAMA_POOLING_TYPE_RANK) {
    *error = {"ERR_INVALID_ARGUMENT", "pooling type " + std::to_string(config.pooling) + " is not one of mean, cls, last, rank"};
    return nullptr;
  }
  if (config.batchSize < config.contextSize || config.sequences < 1 ||
      config.sequences > llama_max_parallel_sequences()) {
    *error = {"ERR_INVALID_ARGUMENT", "embedding context: batchSize must be >= contextSize and sequences 1.." +
                                          std::to_string(llama_max_parallel_sequences())};
    return nullptr;
  }
  std::shared_ptr<EmbeddingCore> core(new EmbeddingCore());
  core->model_ = model;
  core->config_ = config;
  core->threads_ = config.threads > 0 ? config.threads : PhysicalCores();
  core->threadsBatch_ = config.threadsBatch > 0 ? config.threadsBatch : core->threads_;
  // Rank pooling needs the classifier head after the pool: llama.cpp's graph does it.
  core->ownPooling_ = config.shortGraph && (config.pooling == LLAMA_POOLING_TYPE_MEAN || config.pooling == LLAMA_POOLING_TYPE_CLS ||
                      config.pooling == LLAMA_POOLING_TYPE_LAST);
  core->shortcut_ = core->ownPooling_ ? Shortcut::kProbe : Shortcut::kOff;
  std::string detail;
  core->ctx_ = core->NewContext(core->ownPooling_ ? LLAMA_POOLING_TYPE_NONE : static_cast<enum llama_pooling_type>(config.pooling), &detail);
  if (core->ctx_ == nullptr) {
    *error = {"ERR_CONTEXT_CREATE", "llama.cpp could not create the embedding context" + (detail.empty() ? "" : ": " + detail)};
    return nullptr;
  }
  core->contextSize_ = config.contextSize;
  core->batchSize_ = std::min<uint32_t>(config.batchSize, llama_n_batch(core->ctx_));
  core->sequences_ = llama_n_seq_max(core->ctx_);
  core->pooling_ = core->ownPooling_ ? config.pooling : llama_pooling_type(core->ctx_);
  if (core->batchSize_ < core->contextSize_ || llama_n_ubatch(core->ctx_) < core->batchSize_) {
    *error = {"ERR_CONTEXT_CREATE", "llama.cpp gave the embedding context a batch of " + std::to_string(core->batchSize_) +
                                        " tokens (ubatch " + std::to_string(llama_n_ubatch(core->ctx_)) + "), less than asked"};
    return nullptr;
  }
  // rank: n_cls_out scores per input (the first is the relevance score); otherwise the pooled
  // vector, of the model's output width.
  core->dimensions_ = core->pooling_ == LLAMA_POOLING_TYPE_RANK ? std::max<uint32_t>(1, llama_model_n_cls_out(model->model))
                                                                : static_cast<uint32_t>(llama_model_n_embd_out(model->model));
  core->batch_ = llama_batch_init(static_cast<int32_t>(core->batchSize_), 0, 1);
  AddonState* state = AddonState::Get(env);
  state->stoppables->Add(core);
  ProcessStoppables().Add(core);
  return core;
}

llama_context* EmbeddingCore::NewContext(enum llama_pooling_type pooling, std::string* detail) {
  llama_context_params cp = llama_context_default_params();
  cp.embeddings = true;
  cp.pooling_type = pooling;
  // One cache shared by every input of a decode (the embedding example's kv_unified), as many
  // cells as a decode has tokens; cleared before each decode.
  cp.kv_unified = true;
  // Never more sequences than tokens in a batch: llama.cpp reserves an output per sequence and
  // asserts (aborts) when that exceeds n_batch.
  cp.n_seq_max = std::min(config_.sequences, config_.batchSize);
  cp.n_ctx = config_.batchSize;
  cp.n_batch = config_.batchSize;
  // A pooled input must sit in one ubatch (pooling runs per ubatch; non-causal models assert it).
  cp.n_ubatch = config_.batchSize;
  cp.n_threads = threads_;
  cp.n_threads_batch = threadsBatch_;
  cp.no_perf = true;
  cp.abort_callback = AbortCallback;
  cp.abort_callback_data = this;
  if (pooling == LLAMA_POOLING_TYPE_NONE) {
    cp.cb_eval = EvalCallback;
    cp.cb_eval_user_data = this;
  }
  LogCapture capture;
  llama_context* ctx = llama_init_from_model(model_->model, cp);
  if (ctx == nullptr) {
    *detail = capture.errors();
    return nullptr;
  }
  pools_.Free();
  pools_.Attach(ctx, threads_, threadsBatch_, 50);
  return ctx;
}

// ggml's scheduler asks, node by node, whether we want to see a tensor (ask = true); it computes
// up to the first one we want, then shows it (ask = false), and stops the graph if we return
// false. llama.cpp's t_embd (the final norm of a decoder model) is named "result_norm", or
// "result_embd_pooled" once pooling NONE has passed it through; the first such node of a graph is
// the last one an embedding needs. A decode runs one graph per ubatch (hybrid models: one per
// input); a node of layer 0 ("name-0") starts the next. A later node of that name in the same
// graph (sentence-transformers dense layers) fails the probe.
bool EmbeddingCore::EvalCallback(ggml_tensor* t, bool ask, void* data) {
  auto* self = static_cast<EmbeddingCore*>(data);
  if (self->shortcut_ == Shortcut::kOff) return ask ? false : true;
  if (ask && self->stopSeen_) {
    const size_t n = std::strlen(t->name);
    if (n >= 2 && t->name[n - 2] == '-' && t->name[n - 1] == '0') self->stopSeen_ = false;
  }
  if (self->stopSeen_ || (std::strcmp(t->name, "result_norm") != 0 && std::strcmp(t->name, "result_embd_pooled") != 0)) {
    return ask ? false : true;
  }
  if (ask) return true;
  self->stopSeen_ = true;
  self->stops_++;
  if (self->shortcut_ == Shortcut::kSkip) return false;
  // probing: keep the rows to compare with what llama.cpp extracts, and let the graph run on
  if (t->type == GGML_TYPE_F32 && ggml_is_contiguous(t) && ggml_n_dims(t) <= 2 && (self->probe_.empty() || self->probeWidth_ == t->ne[0])) {
    const size_t at = self->probe_.size();
    self->probeWidth_ = t->ne[0];
    self->probeRows_ += t->ne[1];
    self->probe_.resize(at + static_cast<size_t>(ggml_nelements(t)));
    ggml_backend_tensor_get(t, self->probe_.data() + at, 0, ggml_nbytes(t));
  } else {
    self->probeRows_ = -1;  // never matches
  }
  return true;
}

bool EmbeddingCore::ProbeMatches(int32_t rows) const {
  if (probeRows_ != rows || probeWidth_ != static_cast<int64_t>(dimensions_)) return false;
  if (probe_.size() != static_cast<size_t>(rows) * dimensions_) return false;
  for (int32_t k = 0; k < rows; k++) {
    const float* e = llama_get_embeddings_ith(ctx_, k);
    if (e == nullptr || std::memcmp(e, probe_.data() + static_cast<size_t>(k) * dimensions_, dimensions_ * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

NativeError EmbeddingCore::UseLlamaPooling() {
  shortcut_ = Shortcut::kOff;
  ownPooling_ = false;
  probe_.clear();
  llama_free(ctx_);
  ctx_ = nullptr;
  std::string detail;
  ctx_ = NewContext(static_cast<enum llama_pooling_type>(pooling_), &detail);
  if (ctx_ == nullptr) {
    return {"ERR_CONTEXT_CREATE", "llama.cpp could not create the embedding context" + (detail.empty() ? "" : ": " + detail)};
  }
  return {};
}

// llama.cpp's build_pooling, on the rows of one input: mean (each row times 1/n, summed), the
// first row (CLS) or the last.
void EmbeddingCore::Pool(int32_t firstRow, uint32_t rows, float* out) const {
  if (pooling_ == LLAMA_POOLING_TYPE_CLS || pooling_ == LLAMA_POOLING_TYPE_LAST) {
    const int32_t row = pooling_ == LLAMA_POOLING_TYPE_CLS ? firstRow : firstRow + static_cast<int32_t>(rows) - 1;
    std::memcpy(out, llama_get_embeddings_ith(ctx_, row), dimensions_ * sizeof(float));
    return;
  }
  std::vector<double> sum(dimensions_, 0.0);
  const float scale = 1.0f / static_cast<float>(rows);
  for (uint32_t r = 0; r < rows; r++) {
    const float* e = llama_get_embeddings_ith(ctx_, firstRow + static_cast<int32_t>(r));
    for (uint32_t d = 0; d < dimensions_; d++) sum[d] += e[d] * scale;
  }
  for (uint32_t d = 0; d < dimensions_; d++) out[d] = static_cast<float>(sum[d]);
}

EmbeddingCore::~EmbeddingCore() {
  llama_batch_free(batch_);  // (a zeroed batch when Create failed first: frees nothing)
  if (ctx_ != nullptr) {
    llama_free(ctx_);
    ctx_ = nullptr;
  }
  pools_.Free();
  ReturnFreedMemory();
}

bool EmbeddingCore::AbortCallback(void* data) {
  auto* self = static_cast<EmbeddingCore*>(data);
  if (self->stop_.load(std::memory_order_relaxed)) return true;
  return self->cancelled_ != nullptr && (*self->cancelled_)();
}

NativeError EmbeddingCore::Run(const std::vector<llama_token>& tokens, const std::vector<uint32_t>& lengths, int32_t normalize,
                               const std::function<bool()>& cancelled, std::vector<float>* out, uint32_t* decodes,
                               double* decodeMs, uint32_t* shortDecodes) {
  std::lock_guard<std::mutex> lock(runMu_);
  const NativeError disposed{"ERR_DISPOSED", "the embedding context was disposed"};
  if (stop_.load()) return disposed;
  // a fallback to llama.cpp's pooling that could not make its context left none
  if (ctx_ == nullptr) return {"ERR_CONTEXT_CREATE", "the embedding context has no llama context (making it again with llama.cpp's pooling failed)"};
  // Everything that would make llama.cpp assert is refused before the first decode.
  const int32_t nVocab = llama_vocab_n_tokens(model_->vocab);
  size_t total = 0;
  for (size_t i = 0; i < lengths.size(); i++) {
    if (lengths[i] == 0 || lengths[i] > contextSize_) {
      return {"ERR_INVALID_ARGUMENT", "input " + std::to_string(i) + " has " + std::to_string(lengths[i]) +
                                          " tokens (1.." + std::to_string(contextSize_) + " allowed)"};
    }
    total += lengths[i];
  }
  if (total != tokens.size()) return {"ERR_INVALID_ARGUMENT", "the input lengths do not add up to the token count"};
  for (size_t i = 0; i < tokens.size(); i++) {
    if (tokens[i] < 0 || tokens[i] >= nVocab) {
      return {"ERR_INVALID_ARGUMENT", "token " + std::to_string(tokens[i]) + " is outside the vocabulary"};
    }
  }
  out->assign(lengths.size() * dimensions_, 0.0f);
  cancelled_ = &cancelled;
  struct Reset {
    const std::function<bool()>** p;
    ~Reset() { *p = nullptr; }
  } reset{&cancelled_};
  const bool rank = pooling_ == LLAMA_POOLING_TYPE_RANK;
  size_t next = 0, offset = 0;
  *decodes = 0;
  *decodeMs = 0;
  *shortDecodes = 0;
  std::vector<float> pooled(dimensions_);
  while (next < lengths.size()) {
    // As many whole inputs as fit the batch's tokens and sequences (batch_decode's packing).
    const size_t first = next, firstOffset = offset;
    batch_.n_tokens = 0;
    while (next < lengths.size() && next - first < sequences_ && batch_.n_tokens + lengths[next] <= batchSize_) {
      const llama_seq_id seq = static_cast<llama_seq_id>(next - first);
      for (uint32_t j = 0; j < lengths[next]; j++) {
        const int32_t k = batch_.n_tokens++;
        batch_.token[k] = tokens[offset + j];
        batch_.pos[k] = static_cast<llama_pos>(j);
        batch_.n_seq_id[k] = 1;
        batch_.seq_id[k][0] = seq;
        batch_.logits[k] = 1;  // pooling needs every token's output
      }
      offset += lengths[next];
      next++;
    }
    llama_memory_clear(llama_get_memory(ctx_), true);
    stopSeen_ = false;
    stops_ = 0;
    probe_.clear();
    probeRows_ = 0;
    const bool shortDecode = shortcut_ == Shortcut::kSkip;
    int32_t rc;
    {
      LogCapture capture;
      const auto t0 = std::chrono::steady_clock::now();
      rc = llama_decode(ctx_, batch_);
      *decodeMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (rc == 2) return stop_.load() ? disposed : NativeError{"ERR_ABORTED", "the embedding was aborted"};
      if (rc != 0) {
        std::string detail = capture.errors();
        return {"ERR_DECODE", "llama_decode failed (" + std::to_string(rc) + ") on an embedding batch" + (detail.empty() ? "" : ": " + detail)};
      }
    }
    if (shortcut_ == Shortcut::kProbe) {
      if (!ProbeMatches(batch_.n_tokens)) {
        NativeError e = UseLlamaPooling();
        if (!e.ok()) return e;
        next = first;
        offset = firstOffset;
        continue;
      }
      shortcut_ = Shortcut::kSkip;
      probe_.clear();
      probe_.shrink_to_fit();
    }
    (*decodes)++;
    if (shortDecode && stops_ > 0) (*shortDecodes)++;
    int32_t row = 0;
    for (size_t i = first; i < next; i++) {
      const float* e;
      if (ownPooling_) {
        Pool(row, lengths[i], pooled.data());
        row += static_cast<int32_t>(lengths[i]);
        e = pooled.data();
      } else {
        e = llama_get_embeddings_seq(ctx_, static_cast<llama_seq_id>(i - first));
      }
      if (e == nullptr) return {"ERR_INTERNAL", "llama.cpp returned no pooled embedding for input " + std::to_string(i)};
      float* dst = out->data() + i * dimensions_;
      if (rank) {
        std::memcpy(dst, e, dimensions_ * sizeof(float));
      } else {
        Normalize(e, dst, dimensions_, normalize);
      }
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------

namespace {

class EmbedTask : public Task {
 public:
  EmbedTask(std::shared_ptr<EmbeddingCore> core, std::vector<llama_token> tokens, std::vector<uint32_t> lengths, int32_t normalize)
      : core_(std::move(core)), tokens_(std::move(tokens)), lengths_(std::move(lengths)), normalize_(normalize) {}

  void Execute() override {
    std::function<bool()> cancelled = [this] { return StopRequested(); };
    error_ = core_->Run(tokens_, lengths_, normalize_, cancelled, &out_, &decodes_, &decodeMs_, &shortDecodes_);
    core_.reset();  // the last owner may be this thread: the context is freed here, not on JS
  }

  void Settle(Napi::Env env, Napi::Promise::Deferred& deferred) override {
    if (!error_.ok()) {
      deferred.Reject(MakeError(env, error_.code, error_.message).Value());
      return;
    }
    Napi::Float32Array data = Napi::Float32Array::New(env, out_.size());
    if (!out_.empty()) std::memcpy(data.Data(), out_.data(), out_.size() * sizeof(float));
    Napi::Object result = Napi::Object::New(env);
    result.Set("data", data);
    result.Set("decodes", decodes_);
    result.Set("decodeMs", decodeMs_);
    result.Set("shortDecodes", shortDecodes_);
    deferred.Resolve(result);
  }

 private:
  std::shared_ptr<EmbeddingCore> core_;
  std::vector<llama_token> tokens_;
  std::vector<uint32_t> lengths_;
  int32_t normalize_;
  NativeError error_;
  std::vector<float> out_;
  uint32_t decodes_ = 0;
  double decodeMs_ = 0;
  uint32_t shortDecodes_ = 0;
};

uint32_t U32(Napi::Object o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : fallback;
}

}  // namespace

Napi::Function EmbeddingWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeEmbeddingContext",
                     {
                         InstanceMethod<&EmbeddingWrap::Embed>("embed"),
                         InstanceMethod<&EmbeddingWrap::Info>("info"),
                         InstanceMethod<&EmbeddingWrap::Dispose>("dispose"),
                     });
}

EmbeddingWrap::EmbeddingWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EmbeddingWrap>(info) {
  Napi::Env env = info.Env();
  Guard(env, [&] {
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject() ||
        !info[0].As<Napi::Object>().InstanceOf(AddonState::Get(env)->modelCtor.Value())) {
      throw Napi::TypeError::New(env, "NativeEmbeddingContext(model: NativeModel, options: object)");
    }
    const auto& model = ModelWrap::Unwrap(info[0].As<Napi::Object>())->Core(env);
    if (model->vocabOnly) Throw(env, "ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run");
    Napi::Object o = info[1].As<Napi::Object>();
    EmbeddingConfig config;
    config.contextSize = U32(o, "contextSize", config.contextSize);
    config.batchSize = U32(o, "batchSize", config.batchSize);
    config.sequences = U32(o, "sequences", config.sequences);
    config.threads = static_cast<int32_t>(U32(o, "threads", 0));
    config.threadsBatch = static_cast<int32_t>(U32(o, "threadsBatch", 0));
    Napi::Value pooling = o.Get("pooling");
    if (pooling.IsNumber()) config.pooling = pooling.As<Napi::Number>().Int32Value();
    Napi::Value shortGraph = o.Get("shortGraph");
    if (shortGraph.IsBoolean()) config.shortGraph = shortGraph.As<Napi::Boolean>().Value();
    NativeError error;
    core_ = EmbeddingCore::Create(env, model, config, &error);
    if (!core_) Throw(env, error.code, error.message);
  });
}

const std::shared_ptr<EmbeddingCore>& EmbeddingWrap::Core(Napi::Env env) const {
  if (!core_) Throw(env, "ERR_DISPOSED", "the embedding context was disposed");
  return core_;
}

Napi::Value EmbeddingWrap::Embed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    const auto& core = Core(env);
    if (info.Length() < 3 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
        !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array || !info[2].IsNumber()) {
      throw Napi::TypeError::New(env, "embed(tokens: Int32Array, lengths: Uint32Array, normalize: number)");
    }
    Napi::Int32Array t = info[0].As<Napi::Int32Array>();
    Napi::Uint32Array l = info[1].As<Napi::Uint32Array>();
    std::vector<llama_token> tokens(t.Data(), t.Data() + t.ElementLength());
    std::vector<uint32_t> lengths(l.Data(), l.Data() + l.ElementLength());
    auto task = std::make_shared<EmbedTask>(core, std::move(tokens), std::move(lengths), info[2].As<Napi::Number>().Int32Value());
    return Task::Start(env, task, "llamapeg.embed");
  });
}

Napi::Value EmbeddingWrap::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Core(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("contextSize", core->contextSize());
  o.Set("batchSize", core->batchSize());
  o.Set("sequences", core->sequences());
  o.Set("dimensions", core->dimensions());
  o.Set("pooling", core->pooling());
  o.Set("threads", core->threads());
  o.Set("threadsBatch", core->threadsBatch());
  // What the rerank pair prompt needs (format_prompt_rerank): the vocabulary's SEP and whether the
  // tokenizer adds it (BERT vocabularies default them without metadata).
  const llama_vocab* vocab = core->model()->vocab;
  o.Set("sep", llama_vocab_sep(vocab));
  o.Set("addSep", llama_vocab_get_add_sep(vocab));
  return o;
}

Napi::Value EmbeddingWrap::Dispose(const Napi::CallbackInfo& info) {
  // A running embed() keeps the core until it ends (rejecting with ERR_DISPOSED); then it is freed.
  if (core_) {
    core_->RequestStop();
    core_.reset();
  }
  return info.Env().Undefined();
}

}  // namespace lp
