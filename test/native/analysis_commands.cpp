// chat.analyze_* commands: the string helpers the template analysis builds on
// (chat-auto-parser-helpers.h), so the TypeScript analysis can be checked piece by piece.
// Byte strings in and out may cut UTF-8 characters: use `<field>_b64` for inputs; outputs carry
// `<field>_b64` whenever they are not valid UTF-8.
#include "protocol.h"

#include "chat-auto-parser-helpers.h"

#include <string>

namespace {

common_json cmd_diff_split(const common_json & req) {
    const auto d = calculate_diff_split(req_bytes(req, "left"), req_bytes(req, "right"));
    common_json result = common_json::object();
    put_bytes(result, "prefix", d.prefix);
    put_bytes(result, "suffix", d.suffix);
    put_bytes(result, "left", d.left);
    put_bytes(result, "right", d.right);
    return result;
}

common_json cmd_until_common_prefix(const common_json & req) {
    common_json result = common_json::object();
    put_bytes(result, "result", until_common_prefix(req_bytes(req, "full"), req_bytes(req, "left"), req_bytes(req, "right")));
    return result;
}

common_json cmd_after_common_suffix(const common_json & req) {
    common_json result = common_json::object();
    put_bytes(result, "result", after_common_suffix(req_bytes(req, "full"), req_bytes(req, "left"), req_bytes(req, "right")));
    return result;
}

// segmentize_markers, then prune_whitespace_segments when `prune` is true
common_json cmd_segmentize(const common_json & req) {
    auto segments = segmentize_markers(req_bytes(req, "text"));
    if (req_bool_or(req, "prune", false)) {
        segments = prune_whitespace_segments(segments);
    }
    common_json list = common_json::array();
    for (const auto & s : segments) {
        common_json item{ { "type", s.type == segment_type::MARKER ? "MARKER" : "TEXT" } };
        put_bytes(item, "value", s.value);
        list.push_back(item);
    }
    return list;
}

}  // namespace

void register_analysis_commands() {
    auto & c = harness_commands();
    c["chat.analyze_diff_split"]          = cmd_diff_split;
    c["chat.analyze_until_common_prefix"] = cmd_until_common_prefix;
    c["chat.analyze_after_common_suffix"] = cmd_after_common_suffix;
    c["chat.analyze_segmentize"]          = cmd_segmentize;
}
