// chat.* commands: common_chat_templates_apply (prompt, grammar, triggers, parser...), the chat
// output parser (common_chat_peg_parse + mapper) and common_chat_msg_diff::compute_diffs.
#include "chat_convert.h"
#include "clock.h"
#include "peg_expr.h"
#include "protocol.h"

#include "chat.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace {

// Parsing a template (and analysing it, on apply) costs milliseconds; conformance suites call the
// same few templates thousands of times, so keep them.
common_chat_templates * templates_for(const std::string & src, const std::string & bos, const std::string & eos) {
    static std::map<std::tuple<std::string, std::string, std::string>, common_chat_templates_ptr> cache;
    auto key = std::make_tuple(src, bos, eos);
    auto it  = cache.find(key);
    if (it != cache.end()) {
        return it->second.get();
    }
    if (cache.size() >= 256) {
        cache.clear();
    }
    auto tmpls = common_chat_templates_init(/* model= */ nullptr, src, bos, eos);
    return cache.emplace(key, std::move(tmpls)).first->second.get();
}

common_chat_templates * templates_from_request(const common_json & req) {
    return templates_for(req_string(req, "template"), req_string_or(req, "bos_token", ""),
                         req_string_or(req, "eos_token", ""));
}

const char * trigger_type_name(common_grammar_trigger_type type) {
    switch (type) {
        case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN:        return "token";
        case COMMON_GRAMMAR_TRIGGER_TYPE_WORD:         return "word";
        case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN:      return "pattern";
        case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: return "pattern_full";
    }
    return "unknown";
}

common_chat_params apply(const common_json & req, const common_json & request) {
    auto * tmpls  = templates_from_request(req);
    auto   inputs = chat_inputs_from_json(request);
    std::optional<harness_fixed_clock> clock;
    if (req_has(request, "now")) {
        clock.emplace(inputs.now);
    }
    return common_chat_templates_apply(tmpls, inputs);
}

common_json params_to_json(const common_chat_params & params) {
    common_json triggers = common_json::array();
    for (const auto & t : params.grammar_triggers) {
        common_json jt{ { "type", trigger_type_name(t.type) }, { "value", t.value } };
        if (t.token != LLAMA_TOKEN_NULL) {
            jt["token"] = t.token;
        }
        triggers.push_back(jt);
    }
    common_json result{
        { "format", common_chat_format_name(params.format) },
        { "grammar", params.grammar },
        { "grammar_lazy", params.grammar_lazy },
        { "grammar_triggers", triggers },
        { "preserved_tokens", params.preserved_tokens },
        { "additional_stops", params.additional_stops },
        { "generation_prompt", params.generation_prompt },
        { "supports_thinking", params.supports_thinking },
        { "thinking_start_tag", params.thinking_start_tag },
        { "thinking_end_tags", params.thinking_end_tags },
        { "parser_text", params.parser },
        { "message_delimiters", params.message_delimiters.to_json() },
    };
    put_bytes(result, "prompt", params.prompt);
    result["parser"] = params.parser.empty() ? common_json(nullptr) : common_json::parse(params.parser);
    return result;
}

common_json cmd_templates_apply(const common_json & req) {
    const auto & request = req_field(req, "request");
    auto params = apply(req, request);
    auto result = params_to_json(params);
    common_json caps = common_json::object();
    for (const auto & [name, value] : common_chat_templates_get_caps(templates_from_request(req))) {
        caps[name] = value;
    }
    result["caps"] = caps;
    return result;
}

common_json cmd_parse(const common_json & req) {
    const auto pp      = chat_parser_params_from_request(req);
    const auto text    = req_bytes(req, "text");
    const bool partial = req_bool_or(req, "partial", false);
    auto msg = common_chat_peg_parse(pp.parser, text, partial, pp);
    return common_json{ { "message", msg.to_json_oaicompat() }, { "msg", chat_msg_to_json(msg) } };
}

// Parses the prefixes text[0, cut) for every cut in `cuts` (default: every byte offset 0..n), as
// finished (default) or partial outputs: one request for a whole cut sweep. Each entry is
// {ok: true, msg} or {ok: false, error}.
common_json cmd_parse_cuts(const common_json & req) {
    const auto pp      = chat_parser_params_from_request(req);
    const auto text    = req_bytes(req, "text");
    const bool partial = req_bool_or(req, "partial", false);
    std::vector<size_t> cuts;
    if (req_has(req, "cuts")) {
        for (const auto & c : req.at("cuts")) {
            const auto cut = c.get<long long>();
            if (cut < 0 || static_cast<size_t>(cut) > text.size()) {
                throw std::invalid_argument("cut " + std::to_string(cut) + " is outside the text");
            }
            cuts.push_back(static_cast<size_t>(cut));
        }
    } else {
        for (size_t cut = 0; cut <= text.size(); cut++) {
            cuts.push_back(cut);
        }
    }
    common_json out = common_json::array();
    for (const auto cut : cuts) {
        try {
            auto msg = common_chat_peg_parse(pp.parser, text.substr(0, cut), partial, pp);
            out.push_back(common_json{ { "ok", true }, { "msg", chat_msg_to_json(msg) } });
        } catch (const std::exception & e) {
            out.push_back(common_json{ { "ok", false }, { "error", e.what() } });
        }
    }
    return out;
}

common_json cmd_diff(const common_json & req) {
    const auto prev = chat_msg_from_json(req_field(req, "prev"));
    const auto next = chat_msg_from_json(req_field(req, "next"));
    common_json diffs = common_json::array();
    for (const auto & d : common_chat_msg_diff::compute_diffs(prev, next)) {
        diffs.push_back(chat_diff_to_json(d));
    }
    return diffs;
}

common_json cmd_support_enable_thinking(const common_json & req) {
    return common_json{ { "supported", common_chat_templates_support_enable_thinking(templates_from_request(req)) } };
}

}  // namespace

// The parser params: from a templates_apply run (template + request), from the fields that
// templates_apply returns (`params`: {format, generation_prompt, parser_text | parser}), or from a
// bare arena/expr (format peg-native, no generation prompt).
common_chat_parser_params chat_parser_params_from_request(const common_json & req) {
    common_chat_parser_params pp;
    if (req_has(req, "template")) {
        auto params = apply(req, req_field(req, "request"));
        pp          = common_chat_parser_params(params);
        if (!params.parser.empty()) {
            pp.parser.load(params.parser);
        }
    } else if (req_has(req, "params")) {
        const auto & p = req.at("params");
        pp.format            = chat_format_from_name(req_string_or(p, "format", "peg-native"));
        pp.generation_prompt = req_string_or(p, "generation_prompt", "");
        if (req_has(p, "parser_text")) {
            pp.parser.load(req_string(p, "parser_text"));
        } else if (req_has(p, "parser")) {
            pp.parser = common_peg_arena::from_json(p.at("parser"));
        }
    } else {
        pp.format = COMMON_CHAT_FORMAT_PEG_NATIVE;
        pp.parser = peg_arena_from_request(req);
    }
    if (req_has(req, "format")) {
        pp.format = chat_format_from_name(req_string(req, "format"));
    }
    if (req_has(req, "generation_prompt")) {
        pp.generation_prompt = req_string(req, "generation_prompt");
    }
    if (req_has(req, "reasoning_format")) {
        pp.reasoning_format = common_reasoning_format_from_name(req_string(req, "reasoning_format"));
    }
    pp.reasoning_in_content = req_bool_or(req, "reasoning_in_content", pp.reasoning_in_content);
    pp.parse_tool_calls     = req_bool_or(req, "parse_tool_calls", pp.parse_tool_calls);
    pp.is_continuation      = req_bool_or(req, "is_continuation", pp.is_continuation);
    pp.echo                 = req_bool_or(req, "echo", pp.echo);
    pp.debug                = req_bool_or(req, "debug", false);
    return pp;
}

void register_chat_commands() {
    auto & c = harness_commands();
    c["chat.templates_apply"] = cmd_templates_apply;
    c["chat.parse"]           = cmd_parse;
    c["chat.parse_cuts"]      = cmd_parse_cuts;
    c["chat.diff"]            = cmd_diff;
    c["chat.supports_enable_thinking"] = cmd_support_enable_thinking;
    // the builder expression language already covers common_chat_peg_builder
    c["chat.peg_build"] = harness_commands().at("peg.build");
}
