// Compute threads as llama.cpp's tools set them up: as many as the machine has physical cores
// (common_cpu_get_num_math), and a ggml thread pool per role (generation, batch) attached to the
// context (common_threadpools). With OpenMP (the default build) the pools only carry settings and
// OpenMP runs the threads, waiting as the process's OMP_WAIT_POLICY says; with ggml's own pool
// (LLAMAPEG_OPENMP=OFF) they are the threads, polling at `poll` (0-100) before they sleep.
#pragma once

#include <llama.h>

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

}  // namespace lp
