// jinja.render (llama.cpp's own Jinja engine on a plain context), chat.render (the chat layer's
// template application with its message normalization) and chat.analyze (the autoparser's
// differential template analysis).
#include "chat_convert.h"
#include "clock.h"
#include "protocol.h"

#include "chat-auto-parser.h"
#include "chat.h"
#include "jinja/caps.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "jinja/value.h"

#include <optional>
#include <sstream>
#include <string>

namespace {

template <typename T> std::string enum_name(const T & v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

common_json caps_json(const jinja::caps & caps) {
    common_json j = common_json::object();
    for (const auto & [name, value] : caps.to_map()) {
        j[name] = value;
    }
    return j;
}

common_json cmd_jinja_render(const common_json & req) {
    const std::string src = req_string(req, "template");
    const auto & context  = req_field(req, "context");
    if (!context.is_object()) {
        throw harness_error("'context' must be an object");
    }
    jinja::lexer lexer;
    auto lexed = lexer.tokenize(src);
    auto prog  = jinja::parse_from_tokens(lexed);
    jinja::context ctx(lexed.source);
    if (req_has(req, "now")) {
        ctx.current_time = std::chrono::system_clock::to_time_t(harness_parse_now(req.at("now")));
    }
    // mark_input tags strings that came from the caller (the chat layer uses it for its probes)
    jinja::global_from_json(ctx, context, req_bool_or(req, "mark_input", false));
    jinja::runtime runtime(ctx);
    const jinja::value results = runtime.execute(prog);
    auto parts = jinja::runtime::gather_string_parts(results);
    common_json result = common_json::object();
    put_bytes(result, "output", parts->as_string().str());
    return result;
}

// common_chat_template_direct_apply: what the analysis probes and the specialized formats render.
common_json cmd_chat_render(const common_json & req) {
    common_chat_template tmpl(req_string(req, "template"), req_string_or(req, "bos_token", ""),
                              req_string_or(req, "eos_token", ""));
    autoparser::generation_params params;
    params.messages              = req_has(req, "messages") ? req.at("messages") : common_json::array();
    params.tools                 = req_has(req, "tools") ? req.at("tools") : common_json();
    params.add_generation_prompt = req_bool_or(req, "add_generation_prompt", false);
    params.enable_thinking       = req_bool_or(req, "enable_thinking", true);
    params.add_bos               = req_bool_or(req, "add_bos", false);
    params.add_eos               = req_bool_or(req, "add_eos", false);
    params.mark_input            = req_bool_or(req, "mark_input", true);
    if (req_has(req, "extra_context")) {
        params.extra_context = req.at("extra_context");
    }
    std::optional<harness_fixed_clock> clock;
    if (req_has(req, "now")) {
        params.now = harness_parse_now(req.at("now"));
        clock.emplace(params.now);
    }
    common_json result = common_json::object();
    put_bytes(result, "prompt", common_chat_template_direct_apply(tmpl, params));
    if (req_bool_or(req, "generation_prompt", false)) {
        put_bytes(result, "generation_prompt", common_chat_template_generation_prompt(tmpl, params));
    }
    return result;
}

common_json cmd_chat_analyze(const common_json & req) {
    common_chat_template tmpl(req_string(req, "template"), req_string_or(req, "bos_token", ""),
                              req_string_or(req, "eos_token", ""));
    autoparser::autoparser ap;
    ap.analyze_template(tmpl);
    const auto & t = ap.tools;
    return common_json{
        { "caps", caps_json(ap.jinja_caps) },
        { "user_start", ap.user_start },
        { "assistant_start", ap.assistant_start },
        { "reasoning", { { "mode", enum_name(ap.reasoning.mode) }, { "start", ap.reasoning.start }, { "end", ap.reasoning.end } } },
        { "content",
          { { "mode", enum_name(ap.content.mode) },
            { "start", ap.content.start },
            { "end", ap.content.end },
            { "requires_nonnull_content", ap.content.requires_nonnull_content } } },
        { "tools",
          { { "format",
              { { "mode", enum_name(t.format.mode) },
                { "section_start", t.format.section_start },
                { "section_end", t.format.section_end },
                { "per_call_start", t.format.per_call_start },
                { "per_call_end", t.format.per_call_end },
                { "fun_name_is_key", t.format.fun_name_is_key },
                { "tools_array_wrapped", t.format.tools_array_wrapped },
                { "openai_wrapper_trigger", t.format.openai_wrapper_trigger },
                { "function_field", t.format.function_field },
                { "name_field", t.format.name_field },
                { "args_field", t.format.args_field },
                { "id_field", t.format.id_field },
                { "gen_id_field", t.format.gen_id_field },
                { "parameter_order", t.format.parameter_order } } },
            { "function",
              { { "name_prefix", t.function.name_prefix },
                { "name_suffix", t.function.name_suffix },
                { "args_separator", t.function.args_separator },
                { "close", t.function.close } } },
            { "arguments",
              { { "start", t.arguments.start },
                { "end", t.arguments.end },
                { "name_prefix", t.arguments.name_prefix },
                { "name_suffix", t.arguments.name_suffix },
                { "value_prefix", t.arguments.value_prefix },
                { "value_suffix", t.arguments.value_suffix },
                { "separator", t.arguments.separator },
                { "tolerate_intertag_whitespace", t.arguments.tolerate_intertag_whitespace } } },
            { "call_id", { { "pos", enum_name(t.call_id.pos) }, { "prefix", t.call_id.prefix }, { "suffix", t.call_id.suffix } } } } },
        { "analysis_complete", ap.analysis_complete },
        { "preserved_tokens", ap.preserved_tokens },
        { "additional_stops", ap.additional_stops },
    };
}

common_json cmd_template_caps(const common_json & req) {
    common_chat_template tmpl(req_string(req, "template"), req_string_or(req, "bos_token", ""),
                              req_string_or(req, "eos_token", ""));
    return caps_json(tmpl.original_caps());
}

}  // namespace

void register_jinja_commands() {
    auto & c = harness_commands();
    c["jinja.render"]  = cmd_jinja_render;
    c["jinja.caps"]    = cmd_template_caps;
    c["chat.render"]   = cmd_chat_render;
    c["chat.analyze"]  = cmd_chat_analyze;
}
