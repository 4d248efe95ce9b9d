#include "generation.h"

#include <algorithm>
#include <cstring>

#include "addon.h"
#include "context.h"

namespace lp {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<llama_token> SortedTokens(Napi::Value v) {
  std::vector<llama_token> out;
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
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
// The loop's side

void GenerationJob::Emit(llama_token token, const std::string& piece, const TokenExtra* extra, bool forced, bool byBudget) {
  if (budget) budget->Observe(token, piece, byBudget);
  std::lock_guard<std::mutex> lock(mu);
  outTokens.push_back(token);
  if (forced || !outForced.empty()) {
    outForced.resize(outTokens.size() - 1, 0);
    outForced.push_back(forced ? 1 : 0);
  }
  outBytes += piece;
  outEnds.push_back(static_cast<uint32_t>(outBytes.size()));
  if (extra != nullptr && !extra->ids.empty()) {
    // Earlier tokens of this batch without entries get empty ranges.
    outExtraEnds.resize(outTokens.size() - 1, static_cast<uint32_t>(outExtra.ids.size()));
    outExtra.ids.insert(outExtra.ids.end(), extra->ids.begin(), extra->ids.end());
    outExtra.values.insert(outExtra.values.end(), extra->values.begin(), extra->values.end());
    outExtraEnds.push_back(static_cast<uint32_t>(outExtra.ids.size()));
  }
  produced++;
  bool due = outTokens.size() >= params.flushTokens ||
             std::chrono::duration<double, std::milli>(Clock::now() - lastFlush).count() >= params.flushMs ||
             produced - released >= params.windowTokens;
  if (!callPending && due) ScheduleCallLocked();
}

void GenerationJob::Finish() {
  std::lock_guard<std::mutex> lock(mu);
  finished = true;
  if (!callPending) ScheduleCallLocked();
}

bool GenerationJob::WindowFull() {
  std::lock_guard<std::mutex> lock(mu);
  return produced - released >= params.windowTokens;
}

void GenerationJob::ScheduleCallLocked() {
  if (tsfnGone) {
    abortRequested.store(true);
    return;
  }
  callPending = true;
  lastFlush = Clock::now();
  if (tsfn.NonBlockingCall(this) != napi_ok) {
    // The environment is going away: nobody reads further tokens.
    callPending = false;
    abortRequested.store(true);
  }
}

void GenerationJob::RequestAbort() {
  abortRequested.store(true);
  // The handle is dropped (on this thread) once the final batch was delivered; until then the
  // loop is alive and may be waiting for something to do.
  if (handle) core->Wake();
}

void GenerationJob::Release(uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu);
    released += n;
  }
  if (handle) core->Wake();
}

// ---------------------------------------------------------------------------------------------
// The JS side

void CallJsBatchImpl(Napi::Env env, Napi::Function fn, GenerationJob* job);

void CallJsBatch(Napi::Env env, Napi::Function fn, std::shared_ptr<GenerationJob>*, GenerationJob* job) {
  // env is null when the function is torn down with its environment.
  if (env == nullptr || job == nullptr) return;
  try {
    CallJsBatchImpl(env, fn, job);
  } catch (...) {
    // Creating the batch's arrays fails only when JS can no longer run; drop it.
  }
}

template <typename T, typename A>
static A CopyArray(Napi::Env env, const std::vector<T>& v) {
  A a = A::New(env, v.size());
  if (!v.empty()) std::memcpy(a.Data(), v.data(), v.size() * sizeof(T));
  return a;
}

void CallJsBatchImpl(Napi::Env env, Napi::Function fn, GenerationJob* job) {
  std::vector<int32_t> tokens;
  std::string bytes;
  std::vector<uint32_t> ends;
  TokenExtra extra;
  std::vector<uint32_t> extraEnds;
  std::vector<uint8_t> forced;
  bool deliverFinal = false;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    tokens.swap(job->outTokens);
    bytes.swap(job->outBytes);
    ends.swap(job->outEnds);
    extra.ids.swap(job->outExtra.ids);
    extra.values.swap(job->outExtra.values);
    extraEnds.swap(job->outExtraEnds);
    forced.swap(job->outForced);
    job->callPending = false;
    if (job->finished && !job->finalDelivered) deliverFinal = job->finalDelivered = true;
  }
  Napi::HandleScope scope(env);
  Napi::Int32Array jsTokens = CopyArray<int32_t, Napi::Int32Array>(env, tokens);
  Napi::Uint8Array jsBytes = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(jsBytes.Data(), bytes.data(), bytes.size());
  Napi::Uint32Array jsEnds = CopyArray<uint32_t, Napi::Uint32Array>(env, ends);
  Napi::Value jsExtra = env.Undefined();
  if (!extra.ids.empty()) {
    extraEnds.resize(tokens.size(), static_cast<uint32_t>(extra.ids.size()));
    Napi::Object o = Napi::Object::New(env);
    o.Set("ids", CopyArray<int32_t, Napi::Int32Array>(env, extra.ids));
    o.Set("values", CopyArray<float, Napi::Float32Array>(env, extra.values));
    o.Set("ends", CopyArray<uint32_t, Napi::Uint32Array>(env, extraEnds));
    jsExtra = o;
  }
  Napi::Value jsForced = env.Undefined();
  if (!forced.empty()) {
    forced.resize(tokens.size(), 0);
    jsForced = CopyArray<uint8_t, Napi::Uint8Array>(env, forced);
  }
  Napi::Value final = env.Undefined();
  if (deliverFinal) {
    Napi::Object o = Napi::Object::New(env);
    const GenerationStats& s = job->stats;  // written before `finished`, read after: ordered by mu
    o.Set("promptTokens", s.promptTokens);
    o.Set("reusedTokens", s.reusedTokens);
    o.Set("checkpointTokens", s.checkpointTokens);
    o.Set("sharedTokens", s.sharedTokens);
    o.Set("generatedTokens", s.generatedTokens);
    o.Set("shifts", s.shifts);
    o.Set("stalledSteps", s.stalledSteps);
    o.Set("contendedSteps", s.contendedSteps);
    o.Set("forcedTokens", s.forcedTokens);
    o.Set("forcedRuns", s.forcedRuns);
    o.Set("draftTokens", s.draftTokens);
    o.Set("draftAcceptedTokens", s.draftAcceptedTokens);
    if (job->params.reasoning.budget >= 0) {
      o.Set("reasoningTokens", s.reasoningTokens);
      o.Set("reasoningForcedTokens", s.reasoningForcedTokens);
    }
    o.Set("queueMs", s.queueMs);
    o.Set("promptMs", s.promptMs);
    o.Set("generateMs", s.generateMs);
    o.Set("sampleMs", s.sampleMs);
    o.Set("stopReason", s.stopReason);
    if (s.stopToken != LLAMA_TOKEN_NULL) o.Set("stopToken", s.stopToken);
    if (!job->error.ok()) o.Set("error", MakeError(env, job->error.code, job->error.message).Value());
    final = o;
  }
  {
    // Keep the buffers' capacity for the next batch instead of reallocating per token; and
    // deliver what arrived during this call when nothing else would schedule it: a generation
    // that waits for the reader emits nothing more, and a final seen after our swap needs a call.
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->outTokens.empty()) {
      tokens.clear(); job->outTokens.swap(tokens);
      bytes.clear(); job->outBytes.swap(bytes);
      ends.clear(); job->outEnds.swap(ends);
    }
    bool more = !job->outTokens.empty() || (job->finished && !job->finalDelivered);
    if (more && !job->callPending && job->tsfnAlive && !deliverFinal) job->ScheduleCallLocked();
  }
  try {
    fn.Call({jsTokens, jsBytes, jsEnds, final, jsExtra, jsForced});
  } catch (...) {
    // Our JS callback does not throw; this happens when JS can no longer run.
  }
  if (deliverFinal && job->tsfnAlive) {
    // Nothing follows the final batch: let the function (and what it keeps alive) go.
    job->tsfnAlive = false;
    job->tsfn.Release();
  }
}

std::shared_ptr<GenerationJob> CreateGeneration(Napi::Env env, const llama_vocab* vocab, grammar::VocabIndexHolder* vocabIndex, uint32_t defaultSeed,
                                                Napi::Int32Array prompt, Napi::Object o, Napi::Function onBatch) {
  if (prompt.ElementLength() == 0) Throw(env, "ERR_INVALID_ARGUMENT", "the prompt has no tokens");
  int32_t nVocab = llama_vocab_n_tokens(vocab);
  for (size_t i = 0; i < prompt.ElementLength(); i++) {
    if (prompt[i] < 0 || prompt[i] >= nVocab) {
      throw Napi::RangeError::New(env, "prompt[" + std::to_string(i) + "] = " + std::to_string(prompt[i]) + " is outside the vocabulary");
    }
  }
  auto job = std::make_shared<GenerationJob>();
  GenerationParams& p = job->params;
  p.prompt.assign(prompt.Data(), prompt.Data() + prompt.ElementLength());
  p.maxTokens = static_cast<int64_t>(Num(o, "maxTokens", -1));
  p.stopTokens = SortedTokens(o.Get("stopTokens"));
  p.preserved = SortedTokens(o.Get("preservedTokens"));
  p.special = o.Get("special").ToBoolean().Value();
  p.contextShift = o.Get("contextShift").ToBoolean().Value();
  p.shiftKeep = static_cast<uint32_t>(std::max(0.0, Num(o, "contextShiftKeep", 0)));
  p.flushTokens = std::max<uint32_t>(1, static_cast<uint32_t>(Num(o, "flushTokens", p.flushTokens)));
  p.flushMs = Num(o, "flushMs", p.flushMs);
  p.windowTokens = std::max<uint32_t>(p.flushTokens, static_cast<uint32_t>(Num(o, "windowTokens", p.windowTokens)));
  p.fastForward = o.Get("fastForward").ToBoolean().Value();
  if (o.Get("speculative").IsObject()) {
    Napi::Object so = o.Get("speculative").As<Napi::Object>();
    p.draft.draftMax = static_cast<uint32_t>(std::clamp(Num(so, "draftMax", 0), 0.0, 4096.0));
    p.draft.draftMin = static_cast<uint32_t>(std::clamp(Num(so, "draftMin", 1), 1.0, 4096.0));
    p.draft.ngramMin = static_cast<uint32_t>(std::clamp(Num(so, "ngramMin", 2), 1.0, 4096.0));
    p.draft.ngramMax = static_cast<uint32_t>(std::clamp(Num(so, "ngramMax", 4), static_cast<double>(p.draft.ngramMin), 4096.0));
    p.draft.model = so.Get("model").ToBoolean().Value();
    p.draft.textLookup = !so.Has("textLookup") || so.Get("textLookup").ToBoolean().Value();
    p.draft.pMin = static_cast<float>(std::clamp(Num(so, "pMin", 0), 0.0, 1.0));
  }

  if (o.Get("reasoningBudget").IsObject()) {
    Napi::Object ro = o.Get("reasoningBudget").As<Napi::Object>();
    auto tokens = [&](Napi::Value v, const char* what) {
      std::vector<llama_token> out;
      if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) return out;
      Napi::Int32Array a = v.As<Napi::Int32Array>();
      for (size_t i = 0; i < a.ElementLength(); i++) {
        if (a[i] < 0 || a[i] >= nVocab) Throw(env, "ERR_INVALID_ARGUMENT", std::string("reasoningBudget.") + what + " token " + std::to_string(a[i]) + " is outside the vocabulary");
        out.push_back(a[i]);
      }
      return out;
    };
    auto lists = [&](Napi::Value v, const char* what) {
      std::vector<std::vector<llama_token>> out;
      if (!v.IsArray()) return out;
      Napi::Array a = v.As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); i++) {
        std::vector<llama_token> seq = tokens(a.Get(i), what);
        if (!seq.empty()) out.push_back(std::move(seq));
      }
      return out;
    };
    ReasoningBudgetParams& r = p.reasoning;
    r.budget = static_cast<int32_t>(std::clamp(Num(ro, "tokens", -1), -1.0, 2147483647.0));
    r.start = lists(ro.Get("start"), "start");
    r.end = lists(ro.Get("end"), "end");
    r.forced = tokens(ro.Get("forced"), "forced");
    r.open = ro.Get("open").ToBoolean().Value();
    if (r.budget >= 0 && !r.end.empty()) job->budget = std::make_unique<ReasoningBudget>(r);
  }

  SamplingParams sp;
  sp.temperature = static_cast<float>(Num(o, "temperature", sp.temperature));
  sp.topK = static_cast<int32_t>(Num(o, "topK", sp.topK));
  sp.topP = static_cast<float>(Num(o, "topP", sp.topP));
  sp.minP = static_cast<float>(Num(o, "minP", sp.minP));
  sp.repeatPenalty = static_cast<float>(Num(o, "repeatPenalty", sp.repeatPenalty));
  sp.fastGrammarResample = !o.Get("grammarResample").IsString() ||
                           o.Get("grammarResample").As<Napi::String>().Utf8Value() != "reference";
  sp.grammarFirst = o.Get("grammarFirst").ToBoolean().Value();
  sp.frequencyPenalty = static_cast<float>(Num(o, "frequencyPenalty", 0));
  sp.presencePenalty = static_cast<float>(Num(o, "presencePenalty", 0));
  sp.penaltyLastN = static_cast<int32_t>(Num(o, "penaltyLastN", sp.penaltyLastN));
  sp.logprobs = o.Get("logprobs").ToBoolean().Value();
  sp.topLogprobs = static_cast<int32_t>(Num(o, "topLogprobs", 0));
  Napi::Value biasTokens = o.Get("logitBiasTokens");
  Napi::Value biasValues = o.Get("logitBiasValues");
  if (biasTokens.IsTypedArray() && biasValues.IsTypedArray() && biasTokens.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array &&
      biasValues.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array) {
    Napi::Int32Array t = biasTokens.As<Napi::Int32Array>();
    Napi::Float32Array v = biasValues.As<Napi::Float32Array>();
    for (size_t i = 0; i < t.ElementLength() && i < v.ElementLength(); i++) {
      if (t[i] < 0 || t[i] >= nVocab) Throw(env, "ERR_INVALID_ARGUMENT", "logit bias token " + std::to_string(t[i]) + " is outside the vocabulary");
      sp.logitBias.push_back(llama_logit_bias{t[i], v[i]});
    }
  }
  double seed = Num(o, "seed", -1);
  sp.seed = seed < 0 ? defaultSeed : static_cast<uint32_t>(seed);

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
    if (tokens.IsTypedArray() && tokens.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
      Napi::Int32Array a = tokens.As<Napi::Int32Array>();
      gp.triggerTokens.assign(a.Data(), a.Data() + a.ElementLength());
    }
    Napi::Value prefill = go.Get("prefillTokens");
    if (prefill.IsTypedArray()) {
      Napi::Int32Array a = prefill.As<Napi::Int32Array>();
      gp.prefillTokens.assign(a.Data(), a.Data() + a.ElementLength());
    }
  }
  NativeError err;
  job->sampler = Sampler::Create(vocab, sp, hasGrammar ? &gp : nullptr, &err, vocabIndex);
  if (!job->sampler) Throw(env, err.code, err.message);

  auto* holder = new std::shared_ptr<GenerationJob>(job);
  try {
    job->tsfn = GenerationTsfn::New(
        env, onBatch, "llamapeg.generate", 0, 1, holder,
        [](Napi::Env, void*, std::shared_ptr<GenerationJob>* h) {
          // JS thread: after the final batch, or when the environment is torn down.
          GenerationJob& j = **h;
          {
            std::lock_guard<std::mutex> lock(j.mu);
            j.tsfnGone = true;
          }
          j.tsfnAlive = false;
          j.RequestAbort();
          j.handle.reset();  // the context may stop now if nothing else uses it
          delete h;
        },
        static_cast<void*>(nullptr));
  } catch (...) {
    delete holder;
    throw;
  }
  job->lastFlush = job->submitted = Clock::now();
  return job;
}

// ---------------------------------------------------------------------------------------------
// The JS object

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
    throw Napi::TypeError::New(info.Env(), "NativeGeneration cannot be constructed directly; use sequence.generate()");
  }
  job_ = std::move(*info[0].As<Napi::External<std::shared_ptr<GenerationJob>>>().Data());
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
