// chat.stream: the reference's streaming loop replayed on given chunks. llama.cpp's server, for
// every generated piece, re-parses the whole text so far as partial, keeps tool-call ids stable
// by index (the model's id, else a generated one), diffs against the previous message and, when
// asked, moves a call's header (id, name) before its argument fragments; at the end it parses
// once more as complete. That loop lives in tools/server (not in common), so it is written out
// here from its description; the conformance tests compare our ChatSession with it.
#include "chat_convert.h"
#include "protocol.h"

#include "chat.h"

#include <ctime>
#include <set>
#include <string>
#include <vector>

namespace {

struct stream_state {
    common_chat_parser_params  params;
    std::string                text;
    common_chat_msg            msg;
    std::vector<std::string>   ids;
    std::set<size_t>           headers_sent;
    size_t                     generated = 0;

    // the server draws random ids; the harness numbers them so runs are reproducible
    std::string next_id() { return "call_" + std::to_string(generated++); }

    common_chat_msg_diff header_of(size_t i) const {
        common_chat_msg_diff h;
        h.tool_call_index      = i;
        h.tool_call_delta.id   = msg.tool_calls[i].id;
        h.tool_call_delta.name = msg.tool_calls[i].name;
        return h;
    }

    // Header-first reordering: a call's id and name go out once, before its first argument
    // fragment (or at the end of the stream), and never again.
    std::vector<common_chat_msg_diff> reorder(std::vector<common_chat_msg_diff> all, bool partial) {
        std::vector<common_chat_msg_diff> out;
        for (auto & d : all) {
            for (size_t i = 0; i < msg.tool_calls.size(); i++) {
                if (headers_sent.count(i) || msg.tool_calls[i].name.empty()) {
                    continue;
                }
                if (d.tool_call_index != i || !d.tool_call_delta.arguments.empty()) {
                    out.push_back(header_of(i));
                    headers_sent.insert(i);
                }
            }
            if (d.tool_call_index == std::string::npos) {
                out.push_back(std::move(d));
                continue;
            }
            const size_t i = d.tool_call_index;
            if (headers_sent.count(i)) {
                if (!d.tool_call_delta.arguments.empty()) {
                    d.tool_call_delta.name.clear();
                    d.tool_call_delta.id.clear();
                    out.push_back(std::move(d));
                }
            } else if (!d.tool_call_delta.arguments.empty() || !partial) {
                d.tool_call_delta.name = msg.tool_calls[i].name;
                d.tool_call_delta.id   = msg.tool_calls[i].id;
                out.push_back(std::move(d));
                headers_sent.insert(i);
            }
        }
        if (!partial) {
            for (size_t i = 0; i < msg.tool_calls.size(); i++) {
                if (!headers_sent.count(i) && !msg.tool_calls[i].name.empty()) {
                    out.push_back(header_of(i));
                    headers_sent.insert(i);
                }
            }
        }
        return out;
    }

    // one step: returns the diffs; an empty parse result leaves the message (and diffs) unchanged
    std::vector<common_chat_msg_diff> update(const std::string & added, bool partial, bool filter) {
        text += added;
        const auto prev = msg;
        auto next = common_chat_parse(text, partial, params);
        if (next.empty()) {
            return {};
        }
        next.set_tool_call_ids(ids, [this]() { return next_id(); });
        msg = next;
        auto diffs = common_chat_msg_diff::compute_diffs(prev, msg);
        return filter ? reorder(std::move(diffs), partial) : diffs;
    }
};

common_json step_json(const stream_state & s, const std::vector<common_chat_msg_diff> & diffs) {
    common_json jd = common_json::array();
    for (const auto & d : diffs) {
        jd.push_back(chat_diff_to_json(d));
    }
    return common_json{ { "message", chat_msg_to_json(s.msg) }, { "diffs", jd } };
}

common_json cmd_stream(const common_json & req) {
    stream_state s;
    s.params = chat_parser_params_from_request(req);
    const bool filter = req_bool_or(req, "filter_tool_calls", false);

    std::vector<std::string> chunks;
    if (req_has(req, "chunks_b64")) {
        for (const auto & c : req.at("chunks_b64")) {
            chunks.push_back(base64_decode(c.get<std::string>()));
        }
    } else {
        for (const auto & c : req_field(req, "chunks")) {
            chunks.push_back(c.get<std::string>());
        }
    }

    if (s.params.is_continuation && !s.params.echo) {
        // as the server does: the prefilled part is the starting message, not a delta
        s.msg = common_chat_parse("", true, s.params);
    }

    // `timing: true` adds the process CPU time of each step (parse + ids + diff, not the JSON),
    // for the streaming benchmark: what the reference spends per token at each length
    const bool timing = req_bool_or(req, "timing", false);
    std::vector<double> cpu_ns;
    auto timed = [&](const std::string & chunk, bool partial) {
        const std::clock_t c0 = std::clock();
        auto diffs = s.update(chunk, partial, filter);
        cpu_ns.push_back((double) (std::clock() - c0) * 1e9 / CLOCKS_PER_SEC);
        return diffs;
    };

    common_json steps = common_json::array();
    common_json result = common_json::object();
    try {
        for (const auto & chunk : chunks) {
            steps.push_back(step_json(s, timed(chunk, /* partial= */ true)));
        }
        result["final"] = step_json(s, timed("", /* partial= */ false));
    } catch (const std::exception & e) {
        // the server ends the stream with an error here; report where
        result["error"]      = e.what();
        result["error_step"] = steps.size();
    }
    result["steps"] = steps;
    if (timing) {
        result["step_cpu_ns"] = cpu_ns;
    }
    return result;
}

}  // namespace

void register_stream_commands() {
    harness_commands()["chat.stream"] = cmd_stream;
}
