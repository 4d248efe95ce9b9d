#include "clock.h"

#include "protocol.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#if defined(__linux__)
#    include <dlfcn.h>
#    define HARNESS_FIXED_CLOCK 1
#endif

static std::atomic<bool>      g_fixed{ false };
static std::atomic<long long> g_fixed_ns{ 0 };

#if HARNESS_FIXED_CLOCK
using clock_gettime_fn = int (*)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime() {
    static clock_gettime_fn fn = reinterpret_cast<clock_gettime_fn>(dlsym(RTLD_NEXT, "clock_gettime"));
    return fn;
}

// These definitions in the executable take precedence over libc's for the whole process
// (libstdc++ and the statically linked llama.cpp code included).
extern "C" int clock_gettime(clockid_t clk, struct timespec * ts) noexcept {
    if (clk == CLOCK_REALTIME && g_fixed.load()) {
        const long long ns = g_fixed_ns.load();
        ts->tv_sec  = (time_t) (ns / 1000000000LL);
        ts->tv_nsec = (long) (ns % 1000000000LL);
        return 0;
    }
    return real_clock_gettime()(clk, ts);
}

extern "C" time_t time(time_t * out) noexcept {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
#endif

void harness_clock_init() {
    setenv("TZ", "UTC", 1);
    tzset();
}

std::chrono::system_clock::time_point harness_parse_now(const common_json & value) {
    using namespace std::chrono;
    if (value.is_number()) {
        return system_clock::time_point(duration_cast<system_clock::duration>(milliseconds(value.get<long long>())));
    }
    if (value.is_string()) {
        const std::string s = value.get<std::string>();
        int y, mo, d, h = 0, mi = 0, sec = 0;
        if (sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) >= 3) {
            std::tm tm{};
            tm.tm_year = y - 1900;
            tm.tm_mon  = mo - 1;
            tm.tm_mday = d;
            tm.tm_hour = h;
            tm.tm_min  = mi;
            tm.tm_sec  = sec;
            return system_clock::from_time_t(timegm(&tm));
        }
    }
    throw harness_error("'now' must be milliseconds since the epoch or an ISO 8601 UTC date, got " + value.dump());
}

harness_fixed_clock::harness_fixed_clock(std::chrono::system_clock::time_point now) {
#if HARNESS_FIXED_CLOCK
    g_fixed_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
    g_fixed.store(true);
#else
    (void) now;
    throw harness_error("a fixed 'now' needs the Linux build of the harness (clock interposition)");
#endif
}

harness_fixed_clock::~harness_fixed_clock() {
    g_fixed.store(false);
}
