#include "context.h"

#include <algorithm>
#include <cstring>

#include <future>

#include "addon.h"
#include "generation.h"
#include "log.h"
#include "seq-state.h"
#include "task.h"

namespace lp {

std::shared_ptr<ContextCore> ContextCore::Create(Napi::Env env, const std::shared_ptr<ModelCore>& model,
                                                 const ContextConfig& config, NativeError* error) {
  std::shared_ptr<ContextCore> core(new ContextCore());
  core->model_ = model;
  llama_context_params cp = llama_context_default_params();
  // Every sequence gets config.contextSize cells: split, each its own stream; unified, one shared
  // buffer of all of them (no sequence may take more than its share, so none runs out).
  cp.n_seq_max = config.sequences;
  cp.kv_unified = config.kvUnified;
  cp.n_ctx = config.contextSize * config.sequences;
  // llama.cpp asserts (aborts) when a batch cannot hold one output per sequence.
  cp.n_batch = std::max(config.batchSize, config.sequences);
  cp.n_ubatch = cp.n_batch;
  // 0 = llama.cpp's defaults: physical cores for generation, the same for batches (prompts).
  cp.n_threads = config.threads > 0 ? config.threads : PhysicalCores();
  cp.n_threads_batch = config.threadsBatch > 0 ? config.threadsBatch : cp.n_threads;
  cp.no_perf = true;
  cp.swa_full = config.swaFull;
  cp.abort_callback = AbortCallback;
  cp.abort_callback_data = core.get();
  LogCapture capture;
  core->ctx_ = llama_init_from_model(model->model, cp);
  if (core->ctx_ == nullptr) {
    std::string detail = capture.errors();
    *error = {"ERR_CONTEXT_CREATE", "llama.cpp could not create the context" + (detail.empty() ? "" : ": " + detail)};
    return nullptr;
  }
  core->nSeq_ = llama_n_seq_max(core->ctx_);
  core->cells_ = llama_n_ctx(core->ctx_);
  core->kvUnified_ = config.kvUnified;
  core->sequenceSize_ = config.kvUnified ? core->cells_ / core->nSeq_ : llama_n_ctx_seq(core->ctx_);
  core->batchSize_ = llama_n_batch(core->ctx_);
  core->threads_ = cp.n_threads;
  core->threadsBatch_ = cp.n_threads_batch;
  core->seed_ = config.seed;
  core->canShift_ = llama_memory_can_shift(llama_get_memory(core->ctx_));
  core->swaFull_ = config.swaFull;
  core->nSwa_ = llama_model_n_swa(model->model);
  core->recurrent_ = llama_model_is_recurrent(model->model) || llama_model_is_hybrid(model->model);
  core->needsCheckpoints_ = core->recurrent_ || (core->nSwa_ > 0 && !config.swaFull);
  core->checkpoints_.Configure(core->nSeq_, core->needsCheckpoints_ ? config.checkpoints : 0, config.checkpointBytes);
  core->checkpointInterval_ = config.checkpointInterval;
  core->slots_.resize(core->nSeq_);
  core->batch_ = llama_batch_init(static_cast<int32_t>(core->batchSize_), 0, 1);
  if (config.draftModel) {
    // The draft model's context: one sequence per target sequence, the same cells, a full-size SWA
    // cache (its cells trim back after every verification).
    const llama_model* draft = config.draftModel->model;
    std::string why;
    if (!DraftCompatible(model->model, draft, &why)) {
      *error = {"ERR_INVALID_ARGUMENT", "draftModel cannot draft for this model: " + why};
      return nullptr;
    }
    if (llama_model_is_recurrent(draft) || llama_model_is_hybrid(draft)) {
      *error = {"ERR_INVALID_ARGUMENT", "draftModel: its memory cannot roll back (a recurrent or hybrid model); a rejected draft could not be taken back"};
      return nullptr;
    }
    llama_context_params dp = cp;
    dp.swa_full = true;
    dp.abort_callback = nullptr;
    dp.abort_callback_data = nullptr;
    LogCapture draftCapture;
    core->draftCtx_ = llama_init_from_model(config.draftModel->model, dp);
    if (core->draftCtx_ == nullptr) {
      std::string detail = draftCapture.errors();
      *error = {"ERR_CONTEXT_CREATE", "llama.cpp could not create the draft model's context" + (detail.empty() ? "" : ": " + detail)};
      return nullptr;
    }
    core->draftModel_ = config.draftModel;
    core->draftBatch_ = llama_batch_init(static_cast<int32_t>(core->batchSize_), 0, 1);
    core->draftMirror_.resize(core->nSeq_);
    core->draftVocab_ = llama_vocab_n_tokens(config.draftModel->vocab);
  }
  // Poll level 50 is llama.cpp's default (common_cpu_params::poll); only ggml's own pool uses it.
  core->pools_.Attach(core->ctx_, core->threads_, core->threadsBatch_, 50);

  AddonState* state = AddonState::Get(env);
  state->stoppables->Add(core);
  ProcessStoppables().Add(core);
  try {
    StartCountedThread(state->threads, [core] { core->Loop(); });
  } catch (const std::exception& e) {
    *error = {"ERR_CONTEXT_CREATE", std::string("could not start the context's decode thread: ") + e.what()};
    return nullptr;
  }
  return core;
}

ContextCore::~ContextCore() { FreeNative(); }

void ContextCore::FreeNative() {
  if (draftCtx_ != nullptr) {
    llama_batch_free(draftBatch_);
    draftBatch_ = llama_batch{};
    llama_free(draftCtx_);
    draftCtx_ = nullptr;
  }
  draftModel_.reset();
  if (ctx_ != nullptr) {
    llama_batch_free(batch_);
    batch_ = llama_batch{};
    llama_free(ctx_);
    ctx_ = nullptr;
  }
  pools_.Free();
}

int32_t ContextCore::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopRequested_.load()) return -1;
  for (size_t i = 0; i < slots_.size(); i++) {
    if (!slots_[i].taken) {
      slots_[i].taken = true;
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

void ContextCore::ReleaseSequence(int32_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(seq)];
    if (!slot.taken) return;
    slot.taken = false;
    // The next owner starts empty; the loop drops the cells (after ending a running generation,
    // which touches the mirror until then).
    if (slot.job) {
      slot.job->abortRequested.store(true);
      slot.retiring = std::move(slot.job);
    } else if (!slot.retiring) {
      slot.tokens.clear();
    }
    clears_.push_back(seq);
    wake_ = true;
  }
  cv_.notify_one();
}

bool ContextCore::Taken(int32_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[static_cast<size_t>(seq)].taken;
}

bool ContextCore::Busy(int32_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[static_cast<size_t>(seq)].job != nullptr;
}

bool ContextCore::CopyTokens(int32_t seq, std::vector<llama_token>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = slots_[static_cast<size_t>(seq)];
  if (slot.job) return false;
  if (slot.retiring) {
    out->clear();  // about to be cleared
  } else {
    *out = slot.tokens;
  }
  return true;
}

bool ContextCore::ClearCache(int32_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(seq)];
    if (slot.job) return false;
    if (!slot.retiring) slot.tokens.clear();
    clears_.push_back(seq);
    wake_ = true;
  }
  cv_.notify_one();
  return true;
}

bool ContextCore::Submit(const std::shared_ptr<GenerationJob>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[static_cast<size_t>(job->seq)];
    if (stopRequested_.load() || slot.job) return false;
    slot.job = job;
    queued_.push_back(job);
  }
  cv_.notify_one();
  return true;
}

void ContextCore::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

bool ContextCore::RunOnLoop(std::function<void(bool)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ops_) return false;
    ops_.push_back(std::move(fn));
  }
  cv_.notify_one();
  return true;
}

NativeError ContextCore::SaveSequence(int32_t seq, std::vector<llama_token>* tokens, std::vector<uint8_t>* state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot& slot = slots_[static_cast<size_t>(seq)];
    if (slot.job || slot.retiring) return {"ERR_BUSY", "the sequence is generating"};
    *tokens = slot.tokens;
  }
  state->resize(llama_state_seq_get_size(ctx_, seq));
  if (llama_state_seq_get_data(ctx_, state->data(), state->size(), seq) != state->size()) {
    return {"ERR_INTERNAL", "llama.cpp could not write the sequence's state"};
  }
  return {};
}

NativeError ContextCore::LoadSequence(int32_t seq, const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot& slot = slots_[static_cast<size_t>(seq)];
    if (slot.job || slot.retiring) return {"ERR_BUSY", "the sequence is generating"};
  }
  // Whatever happens next, the sequence starts empty (and stays so on failure).
  ForgetCells(seq);
  const size_t read = llama_state_seq_set_data(ctx_, state.data(), state.size(), seq);
  llama_memory_t mem = llama_get_memory(ctx_);
  const llama_pos last = llama_memory_seq_pos_max(mem, seq);
  if (read != state.size() || last != static_cast<llama_pos>(tokens.size()) - 1) {
    ForgetCells(seq);
    return {"ERR_STATE_MISMATCH", "llama.cpp did not accept the state for this context (read " + std::to_string(read) + " of " +
                                      std::to_string(state.size()) + " bytes; the context's cache layout differs from the one that saved it)"};
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[static_cast<size_t>(seq)].tokens = tokens;
  }
  // A retry of the loaded conversation's last prompt must not need a full decode.
  checkpoints_.Take(ctx_, seq, tokens.size());
  return {};
}

void ContextCore::ForgetSequence(int32_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot& slot = slots_[static_cast<size_t>(seq)];
    if (slot.job || slot.retiring) return;
  }
  ForgetCells(seq);
}

void ContextCore::RequestStop() {
  stopRequested_.store(true);
  Wake();
}

void ContextCore::StopAndWait() {
  RequestStop();
  std::unique_lock<std::mutex> lock(mu_);
  stoppedCv_.wait_for(lock, kStopTimeout, [&] { return stopped_; });
}

// ---------------------------------------------------------------------------------------------
// The JS object

namespace {

uint32_t U32(Napi::Object o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : fallback;
}

}  // namespace

Napi::Function ContextWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeContext",
                     {
                         InstanceMethod<&ContextWrap::Dispose>("dispose"),
                         InstanceMethod<&ContextWrap::Info>("info"),
                         InstanceMethod<&ContextWrap::AcquireSequence>("acquireSequence"),
                         InstanceMethod<&ContextWrap::ReleaseSequence>("releaseSequence"),
                         InstanceMethod<&ContextWrap::Tokens>("tokens"),
                         InstanceMethod<&ContextWrap::ClearCache>("clearCache"),
                         InstanceMethod<&ContextWrap::Generate>("generate"),
                         InstanceMethod<&ContextWrap::SaveState>("saveState"),
                         InstanceMethod<&ContextWrap::LoadState>("loadState"),
                     });
}

Napi::Object ContextWrap::NewInstance(Napi::Env env, const std::shared_ptr<ModelCore>& model, Napi::Object o) {
  if (model->vocabOnly) Throw(env, "ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run");
  ContextConfig config;
  config.contextSize = U32(o, "contextSize", config.contextSize);
  config.batchSize = U32(o, "batchSize", config.batchSize);
  config.sequences = std::max<uint32_t>(1, U32(o, "sequences", 1));
  config.kvUnified = o.Get("kvUnified").ToBoolean().Value();
  config.threads = static_cast<int32_t>(U32(o, "threads", 0));
  config.threadsBatch = static_cast<int32_t>(U32(o, "threadsBatch", 0));
  config.seed = U32(o, "seed", LLAMA_DEFAULT_SEED);
  if (o.Get("swaFull").IsBoolean()) config.swaFull = o.Get("swaFull").ToBoolean().Value();
  config.checkpoints = U32(o, "checkpoints", config.checkpoints);
  config.checkpointInterval = U32(o, "checkpointInterval", config.checkpointInterval);
  if (o.Get("checkpointBytes").IsNumber()) config.checkpointBytes = static_cast<size_t>(o.Get("checkpointBytes").As<Napi::Number>().Int64Value());
  Napi::Value draft = o.Get("draftModel");
  if (!draft.IsUndefined() && !draft.IsNull()) {
    // Only a native model object (lib/llama/model.ts hands its own); anything else is refused
    // before it is unwrapped.
    if (!draft.IsObject() || !draft.As<Napi::Object>().InstanceOf(AddonState::Get(env)->modelCtor.Value())) {
      throw Napi::TypeError::New(env, "draftModel must be a model");
    }
    const auto& draftCore = Napi::ObjectWrap<ModelWrap>::Unwrap(draft.As<Napi::Object>())->Core(env);
    if (draftCore->vocabOnly) Throw(env, "ERR_INVALID_ARGUMENT", "draftModel was loaded with vocabOnly; it has no weights to run");
    config.draftModel = draftCore;
  }
  NativeError error;
  std::shared_ptr<ContextCore> core = ContextCore::Create(env, model, config, &error);
  if (!core) Throw(env, error.code, error.message);
  auto* holder = new std::shared_ptr<ContextHandle>(std::make_shared<ContextHandle>(std::move(core)));
  auto ext = Napi::External<std::shared_ptr<ContextHandle>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<ContextHandle>* p) { delete p; });
  return AddonState::Get(env)->contextCtor.New({ext});
}

ContextWrap::ContextWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ContextWrap>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeContext cannot be constructed directly; use model.createContext()");
  }
  // Moved out: a copy left in the External would keep the context until the next GC.
  handle_ = std::move(*info[0].As<Napi::External<std::shared_ptr<ContextHandle>>>().Data());
}

const std::shared_ptr<ContextHandle>& ContextWrap::Handle(Napi::Env env) const {
  if (!handle_) Throw(env, "ERR_DISPOSED", "the context was disposed");
  return handle_;
}

int32_t ContextWrap::SeqArg(const Napi::CallbackInfo& info, size_t i) const {
  const auto& core = Handle(info.Env())->core;
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "sequence id must be a number");
  int64_t seq = info[i].As<Napi::Number>().Int64Value();
  if (seq < 0 || seq >= core->sequences() || !core->Taken(static_cast<int32_t>(seq))) {
    Throw(info.Env(), "ERR_DISPOSED", "sequence " + std::to_string(seq) + " is not in use (it was disposed)");
  }
  return static_cast<int32_t>(seq);
}

Napi::Value ContextWrap::Dispose(const Napi::CallbackInfo& info) {
  // Running generations end (stopReason "abort"); the llama context and its hold on the model
  // go before this returns (unless the loop is stuck past kStopTimeout).
  if (handle_) {
    std::shared_ptr<ContextCore> core = handle_->core;
    handle_.reset();
    core->StopAndWait();
  }
  return info.Env().Undefined();
}

Napi::Value ContextWrap::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& core = Handle(env)->core;
  Napi::Object o = Napi::Object::New(env);
  o.Set("contextSize", core->sequenceSize());
  o.Set("cells", core->cells());
  o.Set("batchSize", core->batchSize());
  o.Set("sequences", core->sequences());
  o.Set("kvUnified", core->kvUnified());
  o.Set("canShift", core->canShift());
  o.Set("memory", core->needsCheckpoints() ? "checkpoints" : "trim");
  o.Set("slidingWindow", core->slidingWindow());
  o.Set("swaFull", core->swaFull());
  o.Set("threads", core->threads());
  o.Set("threadsBatch", core->threadsBatch());
  return o;
}

Napi::Value ContextWrap::AcquireSequence(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), Handle(info.Env())->core->Acquire());
}

Napi::Value ContextWrap::ReleaseSequence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!handle_) return env.Undefined();  // disposing the context released everything
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "sequence id must be a number");
  int64_t seq = info[0].As<Napi::Number>().Int64Value();
  if (seq >= 0 && seq < handle_->core->sequences()) handle_->core->ReleaseSequence(static_cast<int32_t>(seq));
  return env.Undefined();
}

Napi::Value ContextWrap::Tokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t seq = SeqArg(info, 0);
  std::vector<llama_token> tokens;
  if (!handle_->core->CopyTokens(seq, &tokens)) Throw(env, "ERR_BUSY", "the sequence is generating; its cached tokens are changing");
  Napi::Int32Array out = Napi::Int32Array::New(env, tokens.size());
  if (!tokens.empty()) std::memcpy(out.Data(), tokens.data(), tokens.size() * sizeof(llama_token));
  return out;
}

Napi::Value ContextWrap::ClearCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t seq = SeqArg(info, 0);
  if (!handle_->core->ClearCache(seq)) Throw(env, "ERR_BUSY", "the sequence is generating");
  return env.Undefined();
}

Napi::Value ContextWrap::Generate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    int32_t seq = SeqArg(info, 0);
    if (info.Length() < 4 || !info[1].IsTypedArray() || !info[2].IsObject() || !info[3].IsFunction() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
      throw Napi::TypeError::New(env, "generate(seq: number, prompt: Int32Array, options: object, onBatch: function)");
    }
    const std::shared_ptr<ContextHandle>& handle = handle_;
    ContextCore& core = *handle->core;
    Napi::Int32Array prompt = info[1].As<Napi::Int32Array>();
    if (core.Busy(seq)) Throw(env, "ERR_BUSY", "this sequence is already generating; wait for it to finish or abort it");
    if (prompt.ElementLength() >= core.sequenceSize()) {
      Throw(env, "ERR_CONTEXT_FULL", "the prompt has " + std::to_string(prompt.ElementLength()) +
                                         " tokens; a sequence of this context holds " + std::to_string(core.sequenceSize()));
    }
    Napi::Value spec = info[2].As<Napi::Object>().Get("speculative");
    if (spec.IsObject() && spec.As<Napi::Object>().Get("model").ToBoolean().Value() && !core.hasDraftModel()) {
      Throw(env, "ERR_INVALID_ARGUMENT", "speculative: {type: \"draft\"} needs a context created with a draftModel");
    }
    std::shared_ptr<GenerationJob> job = CreateGeneration(env, core.model()->vocab, &core.model()->grammarIndex, core.seed(), prompt,
                                                          info[2].As<Napi::Object>(), info[3].As<Napi::Function>());
    job->handle = handle;
    job->core = &core;
    job->seq = seq;
    if (!core.Submit(job)) {
      job->handle.reset();
      job->tsfnAlive = false;
      job->tsfn.Release();
      Throw(env, "ERR_BUSY", "this sequence is already generating; wait for it to finish or abort it");
    }
    return GenerationWrap::NewInstance(env, job);
  });
}

// ---------------------------------------------------------------------------------------------
// Sequence state files: the file is read, written and checked on a task thread; only the
// llama.cpp state calls run on the loop thread (between steps, the others' generations wait
// for that much only).

namespace {

class SeqStateTask : public Task {
 public:
  SeqStateTask(std::shared_ptr<ContextHandle> handle, int32_t seq, std::string path, bool save)
      : handle_(std::move(handle)), seq_(seq), path_(std::move(path)), save_(save) {}

  void Execute() override {
    ContextCore& core = *handle_->core;
    SeqStateMeta meta{ModelIdentity(core.model()->model), core.swaFull(), core.sequenceSize()};
    std::vector<llama_token> tokens;
    std::vector<uint8_t> state;
    if (!save_) {
      std::vector<uint8_t> file;
      error_ = ReadWholeFile(path_, &file);
      if (error_.ok()) error_ = DecodeSeqState(file, meta, core.sequenceSize(), &tokens, &state);
      if (!error_.ok()) {
        // The sequence is left empty, as after a failed load of llama.cpp's.
        RunAndWait([&](ContextCore& c) { c.ForgetSequence(seq_); return NativeError{}; });
        return;
      }
      error_ = RunAndWait([&](ContextCore& c) { return c.LoadSequence(seq_, tokens, state); });
      count_ = tokens.size();
      return;
    }
    error_ = RunAndWait([&](ContextCore& c) { return c.SaveSequence(seq_, &tokens, &state); });
    if (!error_.ok()) return;
    std::vector<uint8_t> file = EncodeSeqState(meta, tokens, state);
    tokens.shrink_to_fit();
    state = {};
    error_ = WriteFileAtomic(path_, file);
    count_ = tokens.size();
    bytes_ = file.size();
  }

  void Settle(Napi::Env env, Napi::Promise::Deferred& deferred) override {
    handle_.reset();
    if (!error_.ok()) {
      Napi::Error e = MakeError(env, error_.code, error_.message);
      e.Set("where", Napi::String::New(env, path_));
      deferred.Reject(e.Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("tokens", Napi::Number::New(env, static_cast<double>(count_)));
    o.Set("bytes", Napi::Number::New(env, static_cast<double>(bytes_)));
    deferred.Resolve(o);
  }

 private:
  NativeError RunAndWait(const std::function<NativeError(ContextCore&)>& fn) {
    auto done = std::make_shared<std::promise<NativeError>>();
    std::future<NativeError> result = done->get_future();
    ContextCore* core = handle_->core.get();
    const bool queued = core->RunOnLoop([done, core, &fn](bool alive) {
      if (!alive) return done->set_value({"ERR_DISPOSED", "the context was disposed"});
      try {
        done->set_value(fn(*core));
      } catch (const std::exception& e) {
        done->set_value({"ERR_INTERNAL", std::string("native error: ") + e.what()});
      }
    });
    if (!queued) return {"ERR_DISPOSED", "the context was disposed"};
    return result.get();
  }

  std::shared_ptr<ContextHandle> handle_;
  int32_t seq_;
  std::string path_;
  bool save_;
  NativeError error_;
  size_t count_ = 0, bytes_ = 0;
};

}  // namespace

Napi::Value ContextWrap::SaveState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t seq = SeqArg(info, 0);
  if (info.Length() < 2 || !info[1].IsString()) throw Napi::TypeError::New(env, "saveState(seq: number, path: string)");
  if (handle_->core->Busy(seq)) Throw(env, "ERR_BUSY", "the sequence is generating; save it after the generation ends");
  return Task::Start(env, std::make_shared<SeqStateTask>(handle_, seq, info[1].As<Napi::String>().Utf8Value(), true), "llamapeg.saveState");
}

Napi::Value ContextWrap::LoadState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t seq = SeqArg(info, 0);
  if (info.Length() < 2 || !info[1].IsString()) throw Napi::TypeError::New(env, "loadState(seq: number, path: string)");
  if (handle_->core->Busy(seq)) Throw(env, "ERR_BUSY", "the sequence is generating; load into it after the generation ends");
  return Task::Start(env, std::make_shared<SeqStateTask>(handle_, seq, info[1].As<Napi::String>().Utf8Value(), false), "llamapeg.loadState");
}

}  // namespace lp
