// `peg.bench`: times the reference PEG parser inside this process, for scripts/bench-peg.mjs
// (TypeScript vs C++ throughput). Request: arena|expr, input|input_b64, iterations (default 100),
// partial. Answer: {ns_per_parse, cpu_ns_per_parse, iterations, type, end}. Each iteration builds a fresh
// common_peg_parse_context (input copy included), as a caller parsing model output does.
// Registers itself at static-initialization time, so no other harness file needs an edit.
#include "peg_expr.h"
#include "protocol.h"

#include <chrono>
#include <ctime>

namespace {

common_json cmd_bench(const common_json & req) {
    auto arena = peg_arena_from_request(req);
    const std::string input = req_bytes(req, "input");
    const long long iterations = req_int_or(req, "iterations", 100);
    if (iterations < 1) {
        throw harness_error("'iterations' must be at least 1");
    }
    const common_peg_parse_flags flags =
        req_bool_or(req, "partial", false) ? COMMON_PEG_PARSE_FLAG_LENIENT : COMMON_PEG_PARSE_FLAG_NONE;

    common_peg_parse_result r;
    {
        common_peg_parse_context warm(input, flags);
        r = arena.parse(warm);
    }
    const std::clock_t c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    for (long long i = 0; i < iterations; i++) {
        common_peg_parse_context ctx(input, flags);
        r = arena.parse(ctx);
    }
    const auto t1 = std::chrono::steady_clock::now();
    const std::clock_t c1 = std::clock();
    const double ns = (double) std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return common_json{
        { "ns_per_parse", ns / (double) iterations },
        // process CPU time: steadier than wall time on a shared machine
        { "cpu_ns_per_parse", (double) (c1 - c0) * 1e9 / CLOCKS_PER_SEC / (double) iterations },
        { "iterations", iterations },
        { "type", common_peg_parse_result_type_name(r.type) },
        { "end", r.end },
    };
}

const bool registered = [] {
    harness_commands()["peg.bench"] = cmd_bench;
    return true;
}();

}  // namespace
