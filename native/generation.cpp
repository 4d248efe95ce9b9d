#include "generation.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "addon.h"
#include "model.h"

namespace lp {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool Contains(const std::vector<llama_token>& sorted, llama_token t) {
  return std::binary_search(sorted.begin(), sorted.end(), t);
}

std::vector<llama_token> SortedTokens(Napi::Value v) {
  std::vector<llama_token> out;
  if (v.IsTypedArray()) {
    Napi::Int32Array a = v.As<Napi::Int32Array>();
    out.assign(a.Data(), a.Data() + a.ElementLength());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double Num(Napi::Object o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The generation thread

void GenerationJob::Run() {
  Clock::time_point t0 = Clock::now();
  try {
    if (DecodePrompt()) {
      stats.promptMs = MsSince(t0);
      Clock::time_point g0 = Clock::now();
      const llama_vocab* vocab = context->model->vocab;
      while (true) {
        if (Aborted()) { stats.stopReason = "abort"; break; }
        if (params.maxTokens >= 0 && stats.generatedTokens >= params.maxTokens) { stats.stopReason = "length"; break; }
        Clock::time_point s0 = Clock::now();
        NativeError err;
        llama_token token = sampler->Sample(context->ctx, &err);
        if (token == LLAMA_TOKEN_NULL) { error = err; break; }
        if (llama_vocab_is_eog(vocab, token)) {
          stats.sampleMs += MsSince(s0);
          stats.stopReason = "eog";
          stats.stopToken = token;
          break;
        }
        if (Contains(params.stopTokens, token)) {
          stats.sampleMs += MsSince(s0);
          stats.stopReason = "stop";
          stats.stopToken = token;
          break;
        }
        if (!sampler->Accept(token, &err)) { error = err; break; }
        stats.sampleMs += MsSince(s0);
        Emit(token, TokenToPiece(vocab, token, params.special || Contains(params.preserved, token)));
        stats.generatedTokens++;
        if (params.maxTokens >= 0 && stats.generatedTokens >= params.maxTokens) { stats.stopReason = "length"; break; }
        if (context->tokens.size() + 1 > context->contextSize) { stats.stopReason = "length"; break; }
        if (Aborted()) { stats.stopReason = "abort"; break; }
        if (!DecodeOne(token)) break;
      }
      stats.generateMs = MsSince(g0);
    } else {
      stats.promptMs = MsSince(t0);
    }
  } catch (const std::exception& e) {
    error = {"ERR_INTERNAL", std::string("generation failed: ") + e.what()};
  } catch (...) {
    error = {"ERR_INTERNAL", "generation failed: unknown exception"};
  }
  // The llama context is free for the next generation from here on.
  threadDone.store(true);
  context->busy.store(false);
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    if (!callPending) ScheduleCallLocked();
  }
  tsfn.Release();
}

bool GenerationJob::DecodePrompt() {
  ContextCore& c = *context;
  const auto& prompt = params.prompt;
  stats.promptTokens = static_cast<uint32_t>(prompt.size());
  // Reuse the longest common prefix already in the cache; re-decode at least the last prompt
  // token so its logits exist.
  size_t n = 0;
  while (n < c.tokens.size() && n < prompt.size() && c.tokens[n] == prompt[n]) n++;
  if (n == prompt.size()) n--;
  llama_memory_t mem = llama_get_memory(c.ctx);
  if (!llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(n), -1)) {
    llama_memory_clear(mem, true);
    n = 0;
  }
  c.tokens.resize(n);
  stats.reusedTokens = static_cast<uint32_t>(n);
  while (n < prompt.size()) {
    if (Aborted()) { stats.stopReason = "abort"; return false; }
    size_t chunk = std::min<size_t>(c.batchSize, prompt.size() - n);
    llama_batch batch = llama_batch_get_one(const_cast<llama_token*>(prompt.data() + n), static_cast<int32_t>(chunk));
    int rc = llama_decode(c.ctx, batch);
    if (rc != 0) return HandleDecodeFailure(rc);
    c.tokens.insert(c.tokens.end(), prompt.begin() + n, prompt.begin() + n + chunk);
    n += chunk;
  }
  return true;
}

bool GenerationJob::DecodeOne(llama_token token) {
  llama_batch batch = llama_batch_get_one(&token, 1);
  int rc = llama_decode(context->ctx, batch);
  if (rc != 0) return HandleDecodeFailure(rc);
  context->tokens.push_back(token);
  return true;
}

bool GenerationJob::HandleDecodeFailure(int rc) {
  // Drop whatever part of the failed batch reached the cache, so `tokens` stays its exact mirror.
  ContextCore& c = *context;
  llama_memory_t mem = llama_get_memory(c.ctx);
  if (!llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(c.tokens.size()), -1)) {
    llama_memory_clear(mem, true);
    c.tokens.clear();
  }
  if (rc == 2 || Aborted()) {
    stats.stopReason = "abort";
  } else if (rc == 1) {
    stats.stopReason = "length";  // no room left in the KV cache
  } else {
    error = {"ERR_DECODE", "llama_decode failed with status " + std::to_string(rc)};
  }
  return false;
}

void GenerationJob::Emit(llama_token token, const std::string& piece) {
  std::unique_lock<std::mutex> lock(mu);
  outTokens.push_back(token);
  outBytes += piece;
  outEnds.push_back(static_cast<uint32_t>(outBytes.size()));
  produced++;
  if (!callPending &&
      (outTokens.size() >= params.flushTokens ||
       std::chrono::duration<double, std::milli>(Clock::now() - lastFlush).count() >= params.flushMs)) {
    ScheduleCallLocked();
  }
  // Backpressure: wait until JS has released enough of what it was handed.
  while (produced - released >= params.windowTokens && !Aborted()) {
    if (!callPending && !outTokens.empty()) ScheduleCallLocked();
    cv.wait(lock);
  }
}

void GenerationJob::ScheduleCallLocked() {
  callPending = true;
  lastFlush = Clock::now();
  if (tsfn.NonBlockingCall(this) != napi_ok) {
    // The environment is going away: nobody will read further tokens.
    callPending = false;
    context->abortRequested.store(true);
  }
}

void GenerationJob::RequestAbort() {
  // Only while the thread runs: afterwards the context may already serve the next generation.
  if (!threadDone.load()) context->abortRequested.store(true);
  std::lock_guard<std::mutex> lock(mu);
  cv.notify_all();
}

void GenerationJob::Join() {
  std::lock_guard<std::mutex> lock(joinMutex);
  if (thread.joinable() && thread.get_id() != std::this_thread::get_id()) thread.join();
}

namespace {

// Every generation of the process, for the exit handler. Never destroyed: it must outlive the
// static destructors it protects.
std::mutex& AllJobsMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<std::weak_ptr<GenerationJob>>& AllJobs() {
  static auto* v = new std::vector<std::weak_ptr<GenerationJob>>();
  return *v;
}

void RegisterJob(const std::shared_ptr<GenerationJob>& job) {
  std::lock_guard<std::mutex> lock(AllJobsMutex());
  auto& all = AllJobs();
  all.erase(std::remove_if(all.begin(), all.end(), [](const std::weak_ptr<GenerationJob>& j) { return j.expired(); }), all.end());
  all.push_back(job);
}

}  // namespace

void StopAllProcessGenerations() {
  std::vector<std::shared_ptr<GenerationJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(AllJobsMutex());
    for (auto& weak : AllJobs()) {
      if (auto job = weak.lock()) jobs.push_back(job);
    }
  }
  for (auto& job : jobs) {
    if (!job->threadDone.load()) job->context->abortRequested.store(true);
    {
      std::lock_guard<std::mutex> lock(job->mu);
      job->cv.notify_all();
    }
    job->Join();
  }
}

void InstallExitHandler() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(StopAllProcessGenerations); });
}

Napi::Value StopGenerationsForExit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() > 0 && info[0].ToBoolean().Value()) {
    StopAllProcessGenerations();
  } else {
    StopAllGenerations(env);
  }
  return env.Undefined();
}

void GenerationJob::Release(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu);
  released += n;
  cv.notify_all();
}

// ---------------------------------------------------------------------------------------------
// JS side

void CallJsBatchImpl(Napi::Env env, Napi::Function fn, GenerationJob* job);

void CallJsBatch(Napi::Env env, Napi::Function fn, std::shared_ptr<GenerationJob>*, GenerationJob* job) {
  if (env == nullptr || job == nullptr) return;
  try {
    CallJsBatchImpl(env, fn, job);
  } catch (...) {
    // Creating the batch's arrays fails only when JS can no longer run; drop it.
  }
}

void CallJsBatchImpl(Napi::Env env, Napi::Function fn, GenerationJob* job) {
  std::vector<int32_t> tokens;
  std::string bytes;
  std::vector<uint32_t> ends;
  bool deliverFinal = false;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    tokens.swap(job->outTokens);
    bytes.swap(job->outBytes);
    ends.swap(job->outEnds);
    job->callPending = false;
    if (job->finished && !job->finalDelivered) deliverFinal = job->finalDelivered = true;
  }
  // Keep the vectors' capacity for the next batch instead of reallocating per token.
  Napi::HandleScope scope(env);
  Napi::Int32Array jsTokens = Napi::Int32Array::New(env, tokens.size());
  if (!tokens.empty()) std::memcpy(jsTokens.Data(), tokens.data(), tokens.size() * sizeof(int32_t));
  Napi::Uint8Array jsBytes = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(jsBytes.Data(), bytes.data(), bytes.size());
  Napi::Uint32Array jsEnds = Napi::Uint32Array::New(env, ends.size());
  if (!ends.empty()) std::memcpy(jsEnds.Data(), ends.data(), ends.size() * sizeof(uint32_t));
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->outTokens.empty()) {
      tokens.clear(); job->outTokens.swap(tokens);
      bytes.clear(); job->outBytes.swap(bytes);
      ends.clear(); job->outEnds.swap(ends);
    }
  }
  Napi::Value final = env.Undefined();
  if (deliverFinal) {
    Napi::Object o = Napi::Object::New(env);
    const GenerationStats& s = job->stats;  // written before `finished`, read after: ordered by mu
    o.Set("promptTokens", s.promptTokens);
    o.Set("reusedTokens", s.reusedTokens);
    o.Set("generatedTokens", s.generatedTokens);
    o.Set("promptMs", s.promptMs);
    o.Set("generateMs", s.generateMs);
    o.Set("sampleMs", s.sampleMs);
    o.Set("stopReason", s.stopReason);
    if (s.stopToken != LLAMA_TOKEN_NULL) o.Set("stopToken", s.stopToken);
    if (!job->error.ok()) o.Set("error", MakeError(env, job->error.code, job->error.message).Value());
    final = o;
  }
  try {
    fn.Call({jsTokens, jsBytes, jsEnds, final});
  } catch (...) {
    // Our JS callback does not throw; this happens when JS can no longer run (the environment is
    // being torn down). Nothing is left to deliver to.
  }
}

Napi::Value StartGeneration(Napi::Env env, const std::shared_ptr<ContextCore>& context, Napi::Int32Array prompt,
                            Napi::Object o, Napi::Function onBatch, std::shared_ptr<GenerationJob>* started) {
  if (prompt.ElementLength() == 0) Throw(env, "ERR_INVALID_ARGUMENT", "the prompt has no tokens");
  if (prompt.ElementLength() >= context->contextSize) {
    Throw(env, "ERR_CONTEXT_FULL", "the prompt has " + std::to_string(prompt.ElementLength()) +
                                       " tokens; the context holds " + std::to_string(context->contextSize));
  }
  const llama_vocab* vocab = context->model->vocab;
  int32_t nVocab = llama_vocab_n_tokens(vocab);
  for (size_t i = 0; i < prompt.ElementLength(); i++) {
    if (prompt[i] < 0 || prompt[i] >= nVocab) {
      throw Napi::RangeError::New(env, "prompt[" + std::to_string(i) + "] = " + std::to_string(prompt[i]) + " is outside the vocabulary");
    }
  }
  auto job = std::make_shared<GenerationJob>();
  job->context = context;
  GenerationParams& p = job->params;
  p.prompt.assign(prompt.Data(), prompt.Data() + prompt.ElementLength());
  p.maxTokens = static_cast<int64_t>(Num(o, "maxTokens", -1));
  p.stopTokens = SortedTokens(o.Get("stopTokens"));
  p.preserved = SortedTokens(o.Get("preservedTokens"));
  p.special = o.Get("special").ToBoolean().Value();
  p.flushTokens = std::max<uint32_t>(1, static_cast<uint32_t>(Num(o, "flushTokens", p.flushTokens)));
  p.flushMs = Num(o, "flushMs", p.flushMs);
  p.windowTokens = std::max<uint32_t>(p.flushTokens, static_cast<uint32_t>(Num(o, "windowTokens", p.windowTokens)));

  SamplingParams sp;
  sp.temperature = static_cast<float>(Num(o, "temperature", sp.temperature));
  sp.topK = static_cast<int32_t>(Num(o, "topK", sp.topK));
  sp.topP = static_cast<float>(Num(o, "topP", sp.topP));
  sp.minP = static_cast<float>(Num(o, "minP", sp.minP));
  sp.repeatPenalty = static_cast<float>(Num(o, "repeatPenalty", sp.repeatPenalty));
  sp.fastGrammarResample = !o.Get("grammarResample").IsString() ||
                           o.Get("grammarResample").As<Napi::String>().Utf8Value() != "reference";
  sp.grammarFirst = o.Get("grammarFirst").ToBoolean().Value();
  double seed = Num(o, "seed", -1);
  sp.seed = seed < 0 ? context->seed : static_cast<uint32_t>(seed);

  GrammarParams gp;
  Napi::Value g = o.Get("grammar");
  bool hasGrammar = g.IsObject();
  if (hasGrammar) {
    Napi::Object go = g.As<Napi::Object>();
    gp.gbnf = go.Get("gbnf").ToString().Utf8Value();
    gp.root = go.Get("root").ToString().Utf8Value();
    gp.lazy = go.Get("lazy").ToBoolean().Value();
    Napi::Value patterns = go.Get("triggerPatterns");
    if (patterns.IsArray()) {
      Napi::Array a = patterns.As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); i++) gp.triggerPatterns.push_back(a.Get(i).ToString().Utf8Value());
    }
    Napi::Value tokens = go.Get("triggerTokens");
    if (tokens.IsTypedArray()) {
      Napi::Int32Array a = tokens.As<Napi::Int32Array>();
      gp.triggerTokens.assign(a.Data(), a.Data() + a.ElementLength());
    }
  }
  NativeError err;
  job->sampler = Sampler::Create(vocab, sp, hasGrammar ? &gp : nullptr, &err, &context->model->grammarIndex);
  if (!job->sampler) Throw(env, err.code, err.message);

  bool expected = false;
  if (!context->busy.compare_exchange_strong(expected, true)) {
    Throw(env, "ERR_BUSY", "this context is already generating; wait for it to finish or abort it");
  }
  context->abortRequested.store(false);
  job->lastFlush = std::chrono::steady_clock::now();
  auto* holder = new std::shared_ptr<GenerationJob>(job);
  try {
    job->tsfn = GenerationTsfn::New(
        env, onBatch, "llamapeg.generate", 0, 1, holder,
        [](Napi::Env, void*, std::shared_ptr<GenerationJob>* h) {
          // Runs on the JS thread after the native thread released the function (or at teardown).
          (*h)->tsfnAlive = false;
          (*h)->RequestAbort();
          (*h)->Join();
          // Let the context (and its KV cache) go as soon as JS drops it, not when this job is GC'd.
          (*h)->sampler.reset();
          (*h)->context.reset();
          delete h;
        },
        static_cast<void*>(nullptr));
  } catch (...) {
    delete holder;
    context->busy.store(false);
    throw;
  }
  {
    AddonState* state = AddonState::Get(env);
    std::lock_guard<std::mutex> lock(state->jobsMutex);
    auto& jobs = state->jobs;
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [](const std::weak_ptr<GenerationJob>& j) { return j.expired(); }), jobs.end());
    jobs.push_back(job);
  }
  RegisterJob(job);
  try {
    job->thread = std::thread([job] { job->Run(); });
  } catch (const std::exception& e) {
    context->busy.store(false);
    job->tsfn.Release();
    Throw(env, "ERR_INTERNAL", std::string("could not start the generation thread: ") + e.what());
  }
  *started = job;
  return GenerationWrap::NewInstance(env, job);
}

void StopAllGenerations(Napi::Env env) {
  AddonState* state = AddonState::Get(env);
  if (state == nullptr) return;
  std::vector<std::weak_ptr<GenerationJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(state->jobsMutex);
    jobs.swap(state->jobs);
  }
  for (auto& weak : jobs) {
    if (auto job = weak.lock()) {
      job->RequestAbort();
      job->Join();
    }
  }
}

Napi::Function GenerationWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeGeneration",
                     {
                         InstanceMethod<&GenerationWrap::Abort>("abort"),
                         InstanceMethod<&GenerationWrap::Release>("release"),
                         InstanceMethod<&GenerationWrap::Ref>("ref"),
                         InstanceMethod<&GenerationWrap::Unref>("unref"),
                     });
}

Napi::Object GenerationWrap::NewInstance(Napi::Env env, std::shared_ptr<GenerationJob> job) {
  auto* holder = new std::shared_ptr<GenerationJob>(std::move(job));
  auto ext = Napi::External<std::shared_ptr<GenerationJob>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<GenerationJob>* p) { delete p; });
  return AddonState::Get(env)->generationCtor.New({ext});
}

GenerationWrap::GenerationWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GenerationWrap>(info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeGeneration cannot be constructed directly; use context.generate()");
  }
  job_ = *info[0].As<Napi::External<std::shared_ptr<GenerationJob>>>().Data();
}

Napi::Value GenerationWrap::Abort(const Napi::CallbackInfo& info) {
  job_->RequestAbort();
  return info.Env().Undefined();
}

Napi::Value GenerationWrap::Release(const Napi::CallbackInfo& info) {
  double n = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 0;
  if (n > 0) job_->Release(static_cast<uint64_t>(n));
  return info.Env().Undefined();
}

Napi::Value GenerationWrap::Ref(const Napi::CallbackInfo& info) {
  if (job_->tsfnAlive) job_->tsfn.Ref(info.Env());
  return info.Env().Undefined();
}

Napi::Value GenerationWrap::Unref(const Napi::CallbackInfo& info) {
  if (job_->tsfnAlive) job_->tsfn.Unref(info.Env());
  return info.Env().Undefined();
}

}  // namespace lp
