// Native threads and who stops them. Every thread the addon starts (a context's decode loop, a
// model load, a large tokenization) is detached and counted twice: in its environment (a
// worker_thread's teardown waits for them, because the addon may be unloaded with it) and in the
// process (process.exit() waits for them before llama.cpp's static destructors run). What can be
// stopped early registers as a Stoppable in both lists.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace lp {

class Stoppable {
 public:
  virtual ~Stoppable() = default;
  // Any thread, idempotent: cancel a load, abort a context's generations. Never blocks.
  virtual void RequestStop() = 0;
};

// Weak references to stoppables; thread-safe.
class StopList {
 public:
  void Add(const std::weak_ptr<Stoppable>& s);
  void StopAll();

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<Stoppable>> items_;
};

class ThreadCounter {
 public:
  void Add();
  void Done();
  // True when no counted thread runs any more; false when `timeout` passed first.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
};

// Process-wide lists; never destroyed (they must outlive every static destructor).
StopList& ProcessStoppables();
ThreadCounter& ProcessThreads();

// Starts `body` on a detached thread counted in `env` and in the process. `body` and what it
// captured are destroyed before the thread is counted as finished, so a finished count means no
// llama.cpp object is touched by that thread any more. Throws std::system_error when the OS
// cannot start a thread.
void StartCountedThread(const std::shared_ptr<ThreadCounter>& env, std::function<void()> body);

// Hands memory freed by llama.cpp back to the OS. glibc keeps freed blocks in per-thread arenas
// (every decode thread gets one), so without this RSS grows by a step whenever a context's
// buffers land in a new arena; no-op elsewhere.
void ReturnFreedMemory();

// How long process exit and environment teardown wait for native threads before giving up.
constexpr std::chrono::milliseconds kStopTimeout{5000};

}  // namespace lp
