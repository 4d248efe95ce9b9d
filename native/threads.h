// Compute threads as llama.cpp's tools set them up: as many as the machine has physical cores
// (common_cpu_get_num_math), and a ggml thread pool per role (generation, batch) attached to the
// context (common_threadpools). With OpenMP (the default build) the pools only carry settings and
// OpenMP runs the threads, waiting as the process's OMP_WAIT_POLICY says; with ggml's own pool
// (LLAMAPEG_OPENMP=OFF) they are the threads, polling at `poll` (0-100) before they sleep.
#pragma once

#include <llama.h>

#include <chrono>
#include <cstdint>

namespace lp {

// Physical cores (not SMT siblings; performance cores on Apple silicon), at least 1.
int32_t PhysicalCores();

class ThreadPools {
 public:
  ThreadPools() = default;
  ThreadPools(const ThreadPools&) = delete;
  ThreadPools& operator=(const ThreadPools&) = delete;
  ~ThreadPools();
  // Creates the pools and attaches them to `ctx`. False (and nothing attached) when the CPU
  // backend has no pool API; llama.cpp then uses its defaults.
  bool Attach(llama_context* ctx, int32_t threads, int32_t threadsBatch, uint32_t poll);
  // Frees the pools; call after the context that uses them is freed.
  void Free();

 private:
  ggml_threadpool* gen_ = nullptr;
  ggml_threadpool* batch_ = nullptr;
  void (*free_)(ggml_threadpool*) = nullptr;
};

// Thread counts per decode that follow contention (issue 28.3). With OpenMP's default wait (what
// llama.cpp ships: spin, then sleep) a 2-thread decode on a machine whose cores are busy with
// other work waits at every barrier for a preempted partner and gets 10-60x slower; one thread has
// no partner to wait for. So: the configured counts while the cores are free, one thread while
// other runnable work competes for them. Contention is the system's runnable-task count
// (/proc/loadavg) above the online cores, our own compute threads discounted; read at most every
// 50 ms. One thread once a busy read is confirmed by a second 2 ms later (on a quiet machine a
// lone blip cost a whole prompt at half speed), back to the configured counts after three quiet
// reads in a row. Off (the configured counts always,
// llama.cpp's behaviour) with LLAMAPEG_ADAPT_THREADS=0, and where /proc is not.
class ContentionGovernor {
 public:
  ContentionGovernor();
  // Sets the context's thread counts for the next decode (a no-op while they are unchanged).
  void Apply(llama_context* ctx, int32_t threads, int32_t threadsBatch);
  // Whether the last reading found contention.
  bool contended() const { return contended_; }

 private:
  bool enabled_ = true;
  bool contended_ = false;
  int quietReads_ = 0;
  int32_t cores_ = 1;
  int32_t applied_ = -1, appliedBatch_ = -1;
  std::chrono::steady_clock::time_point next_{};
};

// Runnable tasks on the system now (the fourth field of /proc/loadavg, "R/T"), or -1.
int32_t RunnableTasks();

}  // namespace lp
