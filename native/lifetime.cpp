#include "lifetime.h"

#include <algorithm>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lp {

void StopList::Add(const std::weak_ptr<Stoppable>& s) {
  std::lock_guard<std::mutex> lock(mu_);
  items_.erase(std::remove_if(items_.begin(), items_.end(), [](const std::weak_ptr<Stoppable>& w) { return w.expired(); }),
               items_.end());
  items_.push_back(s);
}

void StopList::StopAll() {
  std::vector<std::shared_ptr<Stoppable>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : items_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->RequestStop();
}

void ThreadCounter::Add() {
  std::lock_guard<std::mutex> lock(mu_);
  running_++;
}

void ThreadCounter::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  running_--;
  cv_.notify_all();
}

bool ThreadCounter::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return running_ == 0; });
}

void ReturnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

StopList& ProcessStoppables() {
  static auto* list = new StopList();
  return *list;
}

ThreadCounter& ProcessThreads() {
  static auto* counter = new ThreadCounter();
  return *counter;
}

void StartCountedThread(const std::shared_ptr<ThreadCounter>& env, std::function<void()> body) {
  env->Add();
  ProcessThreads().Add();
  try {
    std::thread([env, body = std::move(body)]() mutable {
      try {
        body();
      } catch (...) {
        // Bodies report their own errors; nothing may escape a thread.
      }
      body = nullptr;  // drop what it captured (contexts, models) while still counted
      ProcessThreads().Done();
      env->Done();
    }).detach();
  } catch (...) {
    ProcessThreads().Done();
    env->Done();
    throw;
  }
}

}  // namespace lp
