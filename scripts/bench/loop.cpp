// llamapeg-bench-loop: the plain C++ generation loop that `npm run bench` compares the addon with.
// It does what a careful libllama user writes by hand: decode the prompt, then per token sample
// with the same chain the addon builds (native/sampling.cpp), grammar checked rejection-first
// (sample, test the one token, constrain the full vocabulary only when it is rejected), accept,
// decode the token. No Node, no threads of its own.
//
// Usage: llamapeg-bench-loop --model M (--prompt-tokens 1,2,3 | --prompt TEXT) --n-predict N [--threads T]
//          [--ctx N] [--batch N] [--temp F] [--top-k N] [--top-p F] [--min-p F] [--seed N]
//          [--repeat-penalty F] [--grammar-file F] [--lazy] [--trigger-pattern RE]... [--runs R]
//          [--print] [--serve] [--threads-batch T] [--poll 0..100 | --no-threadpool] [--consumer]
// --consumer: every piece goes through a queue to a second thread, woken per token, that appends
// it (what any binding does: its JS thread wakes for each token). Shows what that wake costs when
// the compute threads hold every CPU.
// Threads as llama.cpp's tools set them up (common_init_from_params): a ggml thread pool per role
// (generation, batch) attached to the context, polling level 50 unless --poll says otherwise. In
// an OpenMP build of ggml the pool only carries settings; the OpenMP runtime runs the threads.
// Prints one JSON object: {"runs":[{"generated":N,"totalMs":..,"promptMs":..,"generateMs":..,"cpuMs":..,"sampleMs":..,
//   "stop":"eog|length","tokens":[..]}]}. --print writes the generated text to stderr.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

namespace {

struct Args {
  std::string model;
  std::vector<llama_token> prompt;
  std::string promptText;
  int nPredict = 128;
  int threads = 1;
  int threadsBatch = -1;  // -1: same as threads
  int poll = 50;          // llama.cpp's default (common_cpu_params::poll)
  bool threadpool = true;
  int ctx = 2048;
  int batch = 512;
  float temp = 0.8f;
  int topK = 40;
  float topP = 0.95f;
  float minP = 0.05f;
  uint32_t seed = 1;
  float repeatPenalty = 1.0f;
  std::string grammarFile;
  bool lazy = false;
  std::vector<std::string> triggerPatterns;
  int runs = 1;
  bool print = false;
  bool serve = false;
  bool consumer = false;
};

// The consumer thread of --consumer: woken per piece, appends it.
class Consumer {
 public:
  Consumer() : thread_([this] { Loop(); }) {}
  ~Consumer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Push(std::string piece) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(piece));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return done_ || !queue_.empty(); });
      while (!queue_.empty()) {
        text_ += queue_.front();
        queue_.pop_front();
      }
      if (done_) return;
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::string text_;
  bool done_ = false;
  std::thread thread_;
};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "llamapeg-bench-loop: %s\n", message.c_str());
  std::exit(2);
}

// Applies arguments onto `a` (the command line, or one request line in --serve mode).
void Apply(Args& a, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& k = args[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= args.size()) Fail("missing value after " + k);
      return args[++i];
    };
    if (k == "--model") a.model = next();
    else if (k == "--prompt-tokens") {
      a.prompt.clear();
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ',')) a.prompt.push_back(static_cast<llama_token>(std::stol(item)));
    } else if (k == "--prompt") a.promptText = next();
    else if (k == "--n-predict") a.nPredict = std::stoi(next());
    else if (k == "--threads") a.threads = std::stoi(next());
    else if (k == "--threads-batch") a.threadsBatch = std::stoi(next());
    else if (k == "--poll") a.poll = std::stoi(next());
    else if (k == "--no-threadpool") a.threadpool = false;
    else if (k == "--ctx") a.ctx = std::stoi(next());
    else if (k == "--batch") a.batch = std::stoi(next());
    else if (k == "--temp") a.temp = std::stof(next());
    else if (k == "--top-k") a.topK = std::stoi(next());
    else if (k == "--top-p") a.topP = std::stof(next());
    else if (k == "--min-p") a.minP = std::stof(next());
    else if (k == "--seed") a.seed = static_cast<uint32_t>(std::stoul(next()));
    else if (k == "--repeat-penalty") a.repeatPenalty = std::stof(next());
    else if (k == "--grammar-file") a.grammarFile = next();
    else if (k == "--lazy") a.lazy = true;
    else if (k == "--trigger-pattern") a.triggerPatterns.push_back(next());
    else if (k == "--runs") a.runs = std::stoi(next());
    else if (k == "--print") a.print = true;
    else if (k == "--serve") a.serve = true;
    else if (k == "--consumer") a.consumer = true;
    else Fail("unknown argument " + k);
  }
}

// CPU time of the whole process (every thread: the OpenMP team too), for a load-independent view.
double ProcessCpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000.0 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000.0;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The addon's chain, in the addon's order (native/sampling.cpp).
llama_sampler* MakeChain(const llama_vocab* vocab, const Args& a) {
  llama_sampler_chain_params cp = llama_sampler_chain_default_params();
  cp.no_perf = true;
  llama_sampler* chain = llama_sampler_chain_init(cp);
  if (a.repeatPenalty != 1.0f) {
    llama_sampler_chain_add(chain, llama_sampler_init_penalties(llama_vocab_n_tokens(vocab), 64, a.repeatPenalty, 0.0f, 0.0f));
  }
  if (a.temp <= 0.0f) {
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
  } else {
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(a.topK));
    llama_sampler_chain_add(chain, llama_sampler_init_top_p(a.topP, 1));
    llama_sampler_chain_add(chain, llama_sampler_init_min_p(a.minP, 1));
    llama_sampler_chain_add(chain, llama_sampler_init_temp(a.temp));
    llama_sampler_chain_add(chain, llama_sampler_init_dist(a.seed));
  }
  return chain;
}

llama_sampler* MakeGrammar(const llama_vocab* vocab, const Args& a) {
  if (a.grammarFile.empty()) return nullptr;
  std::ifstream in(a.grammarFile);
  if (!in) Fail("cannot read " + a.grammarFile);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string gbnf = ss.str();
  llama_sampler* g;
  if (a.lazy) {
    std::vector<const char*> patterns;
    for (const auto& p : a.triggerPatterns) patterns.push_back(p.c_str());
    g = llama_sampler_init_grammar_lazy_patterns(vocab, gbnf.c_str(), "root", patterns.data(), patterns.size(), nullptr, 0);
  } else {
    g = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
  }
  if (g == nullptr) Fail("llama.cpp rejected the grammar in " + a.grammarFile);
  return g;
}

struct Run {
  int generated = 0;
  double totalMs = 0, promptMs = 0, generateMs = 0, cpuMs = 0, sampleMs = 0;
  const char* stop = "length";
  std::vector<llama_token> tokens;
};

Run Generate(llama_context* ctx, const llama_vocab* vocab, const Args& a) {
  Run r;
  llama_memory_clear(llama_get_memory(ctx), true);
  llama_sampler* chain = MakeChain(vocab, a);
  llama_sampler* grammar = MakeGrammar(vocab, a);
  const int nVocab = llama_vocab_n_tokens(vocab);
  std::vector<llama_token_data> cand(static_cast<size_t>(nVocab));
  auto fill = [&](const float* logits) {
    for (int i = 0; i < nVocab; i++) cand[static_cast<size_t>(i)] = llama_token_data{i, logits[i], 0.0f};
  };

  std::string text;
  std::unique_ptr<Consumer> consumer;
  if (a.consumer) consumer = std::make_unique<Consumer>();
  double cpu0 = ProcessCpuMs();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<llama_token> prompt = a.prompt;
  for (size_t n = 0; n < prompt.size(); n += static_cast<size_t>(a.batch)) {
    int32_t chunk = static_cast<int32_t>(std::min(prompt.size() - n, static_cast<size_t>(a.batch)));
    if (llama_decode(ctx, llama_batch_get_one(prompt.data() + n, chunk)) != 0) Fail("prompt decode failed");
  }
  r.promptMs = MsSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.nPredict; i++) {
    auto s0 = std::chrono::steady_clock::now();
    const float* logits = llama_get_logits_ith(ctx, -1);
    fill(logits);
    llama_token_data_array all{cand.data(), cand.size(), -1, false};
    llama_sampler_apply(chain, &all);
    llama_token id = all.data[all.selected].id;
    if (grammar != nullptr) {
      llama_token_data single{id, 1.0f, 0.0f};
      llama_token_data_array one{&single, 1, -1, false};
      llama_sampler_apply(grammar, &one);
      if (single.logit == -INFINITY) {
        fill(logits);
        all = llama_token_data_array{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(grammar, &all);
        llama_sampler_apply(chain, &all);
        if (all.selected < 0 || all.data[all.selected].logit == -INFINITY) Fail("grammar dead end");
        id = all.data[all.selected].id;
      }
    }
    if (llama_vocab_is_eog(vocab, id)) {
      r.sampleMs += MsSince(s0);
      r.stop = "eog";
      break;
    }
    if (grammar != nullptr) llama_sampler_accept(grammar, id);
    llama_sampler_accept(chain, id);
    r.sampleMs += MsSince(s0);  // the same span the addon's stats.sampleMs covers
    r.tokens.push_back(id);
    r.generated++;
    // Every real loop turns tokens into text; the addon does the same per token.
    char buf[256];
    int n = llama_token_to_piece(vocab, id, buf, sizeof buf, 0, false);
    if (n > 0 && consumer) consumer->Push(std::string(buf, static_cast<size_t>(n)));
    else if (n > 0) text.append(buf, static_cast<size_t>(n));
    if (i + 1 == a.nPredict) break;  // the last token needs no decode: it is already generated
    if (llama_decode(ctx, llama_batch_get_one(&id, 1)) != 0) Fail("decode failed");
  }
  consumer.reset();  // joins: the last pieces are consumed inside the timed span
  r.generateMs = MsSince(t1);
  r.totalMs = MsSince(t0);
  r.cpuMs = ProcessCpuMs() - cpu0;
  if (a.print) std::fprintf(stderr, "%s\n", text.c_str());
  llama_sampler_free(chain);
  if (grammar != nullptr) llama_sampler_free(grammar);
  return r;
}


void PrintRun(const Run& run, bool first) {
  std::printf("%s{\"generated\":%d,\"totalMs\":%.3f,\"promptMs\":%.3f,\"generateMs\":%.3f,\"cpuMs\":%.3f,\"sampleMs\":%.3f,\"stop\":\"%s\",\"tokens\":[",
              first ? "" : ",", run.generated, run.totalMs, run.promptMs, run.generateMs, run.cpuMs, run.sampleMs, run.stop);
  for (size_t i = 0; i < run.tokens.size(); i++) std::printf("%s%d", i == 0 ? "" : ",", run.tokens[i]);
  std::printf("]}");
}

// What common_threadpools::init does: one pool per distinct role, the generation pool paused
// while a separate batch pool exists; functions looked up through the CPU backend's registry.
struct Pools {
  ggml_threadpool* gen = nullptr;
  ggml_threadpool* batch = nullptr;
  void (*freeFn)(ggml_threadpool*) = nullptr;
  void Free() {
    if (freeFn == nullptr) return;
    if (gen != nullptr) freeFn(gen);
    if (batch != nullptr) freeFn(batch);
  }
};

Pools AttachPools(llama_context* ctx, const Args& a, int threads, int threadsBatch) {
  Pools p;
  if (!a.threadpool) return p;
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) Fail("no CPU backend");
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
  auto newFn = reinterpret_cast<ggml_threadpool* (*)(ggml_threadpool_params*)>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
  p.freeFn = reinterpret_cast<void (*)(ggml_threadpool*)>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
  if (newFn == nullptr || p.freeFn == nullptr) Fail("the CPU backend has no thread pool API");
  ggml_threadpool_params tp;
  ggml_threadpool_params_init(&tp, threads);
  tp.poll = static_cast<uint32_t>(a.poll);
  ggml_threadpool_params tb;
  ggml_threadpool_params_init(&tb, threadsBatch);
  tb.poll = static_cast<uint32_t>(a.poll);
  if (!ggml_threadpool_params_match(&tp, &tb)) {
    p.batch = newFn(&tb);
    tp.paused = true;
  }
  p.gen = newFn(&tp);
  if (p.gen == nullptr) Fail("cannot create a thread pool");
  llama_attach_threadpool(ctx, p.gen, p.batch);
  return p;
}

// A fresh context per request, as the Node side creates one per run (creation is not timed).
void RunRequest(llama_model* model, const llama_vocab* vocab, Args a) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(a.ctx);
  cp.n_batch = static_cast<uint32_t>(a.batch);
  cp.n_threads = a.threads;
  cp.n_threads_batch = a.threadsBatch > 0 ? a.threadsBatch : a.threads;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) Fail("cannot create a context");
  Pools pools = AttachPools(ctx, a, cp.n_threads, cp.n_threads_batch);
  if (!a.promptText.empty()) {
    std::vector<llama_token> ids(a.promptText.size() + 8);
    int n = llama_tokenize(vocab, a.promptText.c_str(), static_cast<int32_t>(a.promptText.size()), ids.data(),
                           static_cast<int32_t>(ids.size()), false, true);
    if (n <= 0) Fail("cannot tokenize --prompt");
    ids.resize(static_cast<size_t>(n));
    a.prompt = ids;
  }
  if (a.prompt.empty()) Fail("give --prompt-tokens or --prompt");
  std::printf("{\"runs\":[");
  for (int r = 0; r < a.runs; r++) PrintRun(Generate(ctx, vocab, a), r == 0);
  std::printf("]}\n");
  std::fflush(stdout);
  llama_free(ctx);
  pools.Free();
}

}  // namespace

// One-shot: the arguments describe the run. --serve: the model stays loaded and every stdin line
// (arguments separated by tabs, applied over the command line's) is one request, answered by one
// JSON line; this keeps model loading (seconds on a busy machine) out of the bench's wall time.
int main(int argc, char** argv) {
  Args base;
  Apply(base, std::vector<std::string>(argv + 1, argv + argc));
  if (base.model.empty()) Fail("--model is required");
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(base.model.c_str(), mp);
  if (model == nullptr) Fail("cannot load " + base.model);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  if (base.serve) {
    std::printf("{\"ready\":true}\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      std::vector<std::string> args;
      std::stringstream ss(line);
      std::string item;
      while (std::getline(ss, item, '\t')) args.push_back(item);
      Args a = base;
      Apply(a, args);
      RunRequest(model, vocab, a);
    }
  } else {
    RunRequest(model, vocab, base);
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
