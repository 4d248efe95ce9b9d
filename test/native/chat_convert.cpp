#include "chat_convert.h"

#include "clock.h"
#include "protocol.h"

common_chat_templates_inputs chat_inputs_from_json(const common_json & r) {
    if (!r.is_object()) {
        throw harness_error("'request' must be an object");
    }
    common_chat_templates_inputs in;
    in.messages = common_chat_msgs_parse_oaicompat(req_field(r, "messages"));
    if (req_has(r, "tools")) {
        in.tools = common_chat_tools_parse_oaicompat(r.at("tools"));
    }
    if (req_has(r, "tool_choice")) {
        in.tool_choice = common_chat_tool_choice_parse_oaicompat(req_string(r, "tool_choice"));
    }
    in.parallel_tool_calls = req_bool_or(r, "parallel_tool_calls", in.parallel_tool_calls);
    if (req_has(r, "json_schema")) {
        const auto & s = r.at("json_schema");
        in.json_schema = s.is_string() ? s.get<std::string>() : s.dump();
    }
    in.grammar = req_string_or(r, "grammar", "");
    if (req_has(r, "reasoning_format")) {
        in.reasoning_format = common_reasoning_format_from_name(req_string(r, "reasoning_format"));
    }
    in.enable_thinking       = req_bool_or(r, "enable_thinking", in.enable_thinking);
    in.add_generation_prompt = req_bool_or(r, "add_generation_prompt", in.add_generation_prompt);
    if (req_has(r, "continue_final_message")) {
        in.continue_final_message = common_chat_continuation_parse(r.at("continue_final_message"));
    }
    in.add_bos            = req_bool_or(r, "add_bos", in.add_bos);
    in.add_eos            = req_bool_or(r, "add_eos", in.add_eos);
    in.force_pure_content = req_bool_or(r, "force_pure_content", in.force_pure_content);
    if (req_has(r, "chat_template_kwargs")) {
        const auto & kw = r.at("chat_template_kwargs");
        if (!kw.is_object()) {
            throw harness_error("'chat_template_kwargs' must be an object");
        }
        for (const auto & [k, v] : kw.items()) {
            in.chat_template_kwargs[k] = v.dump();
        }
    }
    if (req_has(r, "now")) {
        in.now = harness_parse_now(r.at("now"));
    }
    return in;
}

common_json chat_msg_to_json(const common_chat_msg & msg) {
    common_json parts = common_json::array();
    for (const auto & p : msg.content_parts) {
        parts.push_back({ { "type", p.type }, { "text", p.text } });
    }
    common_json calls = common_json::array();
    for (const auto & tc : msg.tool_calls) {
        calls.push_back({ { "name", tc.name }, { "arguments", tc.arguments }, { "id", tc.id } });
    }
    return common_json{
        { "role", msg.role },
        { "content", msg.content },
        { "content_parts", parts },
        { "reasoning_content", msg.reasoning_content },
        { "tool_calls", calls },
        { "tool_name", msg.tool_name },
        { "tool_call_id", msg.tool_call_id },
    };
}

static std::string string_or_empty(const common_json & j, const std::string & key) {
    if (!j.contains(key) || j.at(key).is_null()) {
        return "";
    }
    const auto & v = j.at(key);
    return v.is_string() ? v.get<std::string>() : v.dump();
}

common_chat_msg chat_msg_from_json(const common_json & j) {
    if (!j.is_object()) {
        throw harness_error("a message must be an object");
    }
    common_chat_msg msg;
    msg.role              = string_or_empty(j, "role");
    msg.content           = string_or_empty(j, "content");
    msg.reasoning_content = string_or_empty(j, "reasoning_content");
    msg.tool_name         = j.contains("tool_name") ? string_or_empty(j, "tool_name") : string_or_empty(j, "name");
    msg.tool_call_id      = string_or_empty(j, "tool_call_id");
    if (j.contains("tool_calls") && j.at("tool_calls").is_array()) {
        for (const auto & t : j.at("tool_calls")) {
            const auto & f = t.contains("function") ? t.at("function") : t;
            common_chat_tool_call tc;
            tc.name      = string_or_empty(f, "name");
            tc.arguments = string_or_empty(f, "arguments");
            tc.id        = string_or_empty(t, "id");
            msg.tool_calls.push_back(tc);
        }
    }
    return msg;
}

common_json chat_diff_to_json(const common_chat_msg_diff & d) {
    return common_json{
        { "reasoning_content_delta", d.reasoning_content_delta },
        { "content_delta", d.content_delta },
        { "tool_call_index", d.tool_call_index == std::string::npos ? common_json(nullptr) : common_json(d.tool_call_index) },
        { "tool_call_delta",
          { { "name", d.tool_call_delta.name }, { "arguments", d.tool_call_delta.arguments }, { "id", d.tool_call_delta.id } } },
    };
}

common_chat_format chat_format_from_name(const std::string & name) {
    for (int f = 0; f < COMMON_CHAT_FORMAT_COUNT; f++) {
        if (name == common_chat_format_name((common_chat_format) f)) {
            return (common_chat_format) f;
        }
    }
    throw harness_error("unknown chat format '" + name + "'");
}
