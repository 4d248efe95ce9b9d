// A fixed wall clock for reproducible prompts. Templates print dates through llama.cpp code that
// reads the system clock directly (jinja's strftime_now via time(), the chat layer's
// datetime/date_string via system_clock::now()), so on Linux the harness interposes time() and
// clock_gettime(CLOCK_REALTIME) for the duration of one request. The process runs in UTC.
#pragma once

#include "json.h"

#include <chrono>

// `now` from a request: milliseconds since the epoch, or an ISO 8601 UTC string
// ("2026-01-31T12:00:00Z"). Throws harness_error otherwise.
std::chrono::system_clock::time_point harness_parse_now(const common_json & value);

// Holds the clock at `now` until destroyed. Throws harness_error where interposition is not built.
class harness_fixed_clock {
  public:
    explicit harness_fixed_clock(std::chrono::system_clock::time_point now);
    ~harness_fixed_clock();
    harness_fixed_clock(const harness_fixed_clock &) = delete;
    harness_fixed_clock & operator=(const harness_fixed_clock &) = delete;
};

void harness_clock_init();  // sets TZ=UTC
