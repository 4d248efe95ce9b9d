#include "threads.h"

#include <ggml-backend.h>
#include <ggml-cpu.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <thread>

#if defined(__linux__)
#include <unistd.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

namespace lp {

int32_t PhysicalCores() {
#if defined(__linux__)
  // One entry per core: the set of its hardware threads (what llama.cpp reads).
  std::set<std::string> cores;
  for (unsigned cpu = 0;; cpu++) {
    std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings");
    if (!f.is_open()) break;
    std::string line;
    if (std::getline(f, line)) cores.insert(line);
  }
  if (!cores.empty()) return static_cast<int32_t>(cores.size());
#elif defined(__APPLE__)
  int32_t n = 0;
  size_t len = sizeof(n);
  if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
  len = sizeof(n);
  if (sysctlbyname("hw.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
#endif
  // llama.cpp's fallback: all of up to 4 hardware threads, else half (assumes 2-way SMT).
  unsigned n = std::thread::hardware_concurrency();
  if (n == 0) return 4;
  return static_cast<int32_t>(n <= 4 ? n : n / 2);
}

ThreadPools::~ThreadPools() { Free(); }

int32_t RunnableTasks() {
#if defined(__linux__)
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return -1;
  double a, b, c;
  int running = -1, total = 0;
  const int n = std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total);
  std::fclose(f);
  return n == 5 ? running : -1;
#else
  return -1;
#endif
}

ContentionGovernor::ContentionGovernor() {
  const char* env = std::getenv("LLAMAPEG_ADAPT_THREADS");
  enabled_ = !(env != nullptr && std::strcmp(env, "0") == 0) && RunnableTasks() >= 0;
#if defined(__linux__)
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cores_ = online > 0 ? static_cast<int32_t>(online) : 1;
#endif
}

void ContentionGovernor::Apply(llama_context* ctx, int32_t threads, int32_t threadsBatch) {
  if (enabled_ && (threads > 1 || threadsBatch > 1)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_) {
      next_ = now + std::chrono::milliseconds(50);
      const int32_t most = std::max(threads, threadsBatch);
      auto busy = [&] {
        const int32_t runnable = RunnableTasks();
        // this thread is one of them, and our other compute threads may still be spinning
        return runnable >= 0 && runnable - most > cores_ - most;
      };
      if (busy()) {
        quietReads_ = 0;
        if (!contended_) {
          // A lone reading is often a blip (a disposed context's thread still freeing its memory,
          // another process's OpenMP threads spinning out after their last decode): only a
          // second busy read 2 ms later counts.
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          contended_ = busy();
        }
      } else if (contended_ && ++quietReads_ >= 3) {
        contended_ = false;
      }
    }
  } else {
    contended_ = false;
  }
  const int32_t t = contended_ ? 1 : threads;
  const int32_t tb = contended_ ? 1 : threadsBatch;
  if (t != applied_ || tb != appliedBatch_) {
    llama_set_n_threads(ctx, t, tb);
    applied_ = t;
    appliedBatch_ = tb;
  }
}

bool ThreadPools::Attach(llama_context* ctx, int32_t threads, int32_t threadsBatch, uint32_t poll) {
  // Through the backend registry, as llama.cpp does: works when ggml's CPU backend is a loadable
  // module (GGML_BACKEND_DL) as well as when it is linked in.
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) return false;
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
  auto create = reinterpret_cast<ggml_threadpool* (*)(ggml_threadpool_params*)>(
      ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
  free_ = reinterpret_cast<void (*)(ggml_threadpool*)>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
  if (create == nullptr || free_ == nullptr) return false;
  ggml_threadpool_params gen;
  ggml_threadpool_params_init(&gen, threads);
  gen.poll = poll;
  ggml_threadpool_params batch;
  ggml_threadpool_params_init(&batch, threadsBatch);
  batch.poll = poll;
  if (!ggml_threadpool_params_match(&gen, &batch)) {
    batch_ = create(&batch);
    if (batch_ == nullptr) return false;
    gen.paused = true;  // llama.cpp starts the generation pool paused; the first decode wakes it
  }
  gen_ = create(&gen);
  if (gen_ == nullptr) {
    Free();
    return false;
  }
  llama_attach_threadpool(ctx, gen_, batch_);
  return true;
}

void ThreadPools::Free() {
  if (free_ == nullptr) return;
  if (gen_ != nullptr) free_(gen_);
  if (batch_ != nullptr) free_(batch_);
  gen_ = batch_ = nullptr;
}

}  // namespace lp
