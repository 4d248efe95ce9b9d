// llamapeg-harness: runs llama.cpp's own chat/PEG/JSON-schema code on JSON requests so the
// TypeScript re-implementation can be compared with the reference by running it.
//
// Protocol: one JSON request per line on stdin, {"id": n, "cmd": "...", ...}; one JSON line per
// request on stdout, {"id": n, "ok": true, "result": ...} or {"id": n, "ok": false, "error": "..."}.
// See test/support/README.md for the commands.
#include "clock.h"
#include "protocol.h"

#include "log.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <iostream>
#include <string>

#include <unistd.h>

// llama.cpp's logger writes INFO to stdout; the protocol needs stdout to itself. Keep a private
// copy of the real stdout for answers and point fd 1 at stderr, so nothing else can reach it.
static FILE * open_protocol_stream() {
    fflush(stdout);
    int fd = dup(STDOUT_FILENO);
    if (fd < 0) {
        return stdout;
    }
    dup2(STDERR_FILENO, STDOUT_FILENO);
    FILE * out = fdopen(fd, "w");
    return out ? out : stdout;
}

static std::string serialize(const common_json & answer) {
    try {
        return answer.dump();
    } catch (const std::exception &) {
        // a result that holds bytes that are not UTF-8 and was not passed through put_bytes
        return answer.dump_safe();
    }
}

static common_json handle_line(const std::string & line) {
    common_json id = nullptr;
    try {
        common_json req = common_json::parse(line);
        if (!req.is_object()) {
            throw harness_error("request must be a JSON object");
        }
        if (req.contains("id")) {
            id = req.at("id");
        }
        const std::string cmd = req_string(req, "cmd");
        auto & commands = harness_commands();
        auto it = commands.find(cmd);
        if (it == commands.end()) {
            throw harness_error("unknown command '" + cmd + "'");
        }
        common_json result = it->second(req);
        return common_json{ { "id", id }, { "ok", true }, { "result", result } };
    } catch (const std::exception & e) {
        return common_json{ { "id", id }, { "ok", false }, { "error", e.what() } };
    } catch (...) {
        return common_json{ { "id", id }, { "ok", false }, { "error", "unknown C++ exception" } };
    }
}

int main() {
    FILE * out = open_protocol_stream();
    // reference code logs warnings we do not want interleaved with test output
    common_log_set_verbosity_thold(-1);
    harness_clock_init();

    register_peg_commands();
    register_schema_commands();
    register_chat_commands();
    register_jinja_commands();
    register_analysis_commands();
    register_stream_commands();
    register_gbnf_commands();

    harness_commands()["ping"] = [](const common_json &) {
        return common_json{ { "pong", true } };
    };
    harness_commands()["commands"] = [](const common_json &) {
        common_json names = common_json::array();
        for (const auto & entry : harness_commands()) {
            names.push_back(entry.first);
        }
        return names;
    };

    // for the client's own tests: a crash and a hang, as a reference bug would cause them
    harness_commands()["harness.abort"] = [](const common_json &) -> common_json {
        std::abort();
    };
    harness_commands()["harness.sleep"] = [](const common_json & req) {
        std::this_thread::sleep_for(std::chrono::milliseconds(req_int_or(req, "ms", 1000)));
        return common_json{ { "slept", true } };
    };

    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty() || line == "\r") {
            continue;
        }
        const std::string answer = serialize(handle_line(line));
        fwrite(answer.data(), 1, answer.size(), out);
        fputc('\n', out);
        fflush(out);
    }
    return 0;
}
