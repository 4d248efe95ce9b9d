#include "peg_expr.h"

#include "protocol.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

// Evaluates builder expressions against one builder. Children are evaluated left to right
// before the node that holds them is created, exactly as the C++ call `p.f(a, b)` would create
// them; this fixes the parser ids in the arena, so both sides must follow the same order.
class expr_evaluator {
  public:
    explicit expr_evaluator(common_chat_peg_builder & p) : p(p) {}

    common_peg_parser eval(const common_json & e) {
        if (e.is_string()) {
            return p.literal(e.get<std::string>());
        }
        if (!e.is_array() || e.empty() || !e.at(0).is_string()) {
            throw harness_error("peg expression must be a string or an array starting with a name, got " + e.dump());
        }
        const std::string op = e.at(0).get<std::string>();
        try {
            return eval_form(op, e);
        } catch (const harness_error &) {
            throw;
        } catch (const std::exception & ex) {
            throw harness_error("peg expression '" + op + "': " + ex.what());
        }
    }

  private:
    common_chat_peg_builder & p;
    std::vector<std::pair<std::string, common_peg_parser_id>> env;

    static const common_json & arg(const common_json & e, size_t i) {
        if (i >= e.size()) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "': missing argument " + std::to_string(i));
        }
        return e.at(i);
    }

    static std::string str_arg(const common_json & e, size_t i) {
        const auto & v = arg(e, i);
        if (!v.is_string()) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "': argument " + std::to_string(i) + " must be a string");
        }
        return v.get<std::string>();
    }

    static int int_arg(const common_json & e, size_t i, int def) {
        if (i >= e.size()) {
            return def;
        }
        const auto & v = e.at(i);
        if (!v.is_number_integer()) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "': argument " + std::to_string(i) + " must be an integer");
        }
        return v.get<int>();
    }

    static bool bool_arg(const common_json & e, size_t i, bool def) {
        if (i >= e.size()) {
            return def;
        }
        const auto & v = e.at(i);
        if (!v.is_boolean()) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "': argument " + std::to_string(i) + " must be a boolean");
        }
        return v.get<bool>();
    }

    static std::vector<std::string> strings_arg(const common_json & e, size_t i) {
        const auto & v = arg(e, i);
        if (v.is_string()) {
            return { v.get<std::string>() };
        }
        if (!v.is_array()) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "': argument " + std::to_string(i) + " must be an array of strings");
        }
        return v.get<std::vector<std::string>>();
    }

    static void expect_args(const common_json & e, size_t min, size_t max) {
        const size_t n = e.size() - 1;
        if (n < min || n > max) {
            throw harness_error("peg expression '" + e.at(0).get<std::string>() + "' takes " + std::to_string(min) +
                                (max != min ? ".." + std::to_string(max) : "") + " arguments, got " + std::to_string(n));
        }
    }

    std::vector<common_peg_parser_id> eval_list(const common_json & e, size_t from) {
        std::vector<common_peg_parser_id> ids;
        for (size_t i = from; i < e.size(); i++) {
            ids.push_back(eval(e.at(i)).id());
        }
        return ids;
    }

    // A binary operator step, as the C++ operator overloads do it: the parser operands exist
    // first; a string operand becomes a literal inside the operator, after them.
    common_peg_parser apply_op(const std::string & op, const common_peg_parser & a, const common_peg_parser & b) {
        if (op == "+") return a + b;
        if (op == "|") return a | b;
        return a << b;
    }

    common_peg_parser apply_op(const std::string & op, const common_peg_parser & a, const std::string & b) {
        if (op == "+") return a + b;
        if (op == "|") return a | b;
        return a << b;
    }

    common_peg_parser apply_op(const std::string & op, const std::string & a, const common_peg_parser & b) {
        if (op == "+") return a + b;
        if (op == "|") return a | b;
        return a << b;
    }

    common_peg_parser eval_operator(const std::string & op, const common_json & e) {
        if (e.size() < 3) {
            throw harness_error("peg operator '" + op + "' needs at least 2 operands");
        }
        const auto & first  = e.at(1);
        const auto & second = e.at(2);
        common_peg_parser acc = [&]() {
            if (first.is_string() && second.is_string()) {
                throw harness_error("peg operator '" + op + "': the first two operands cannot both be strings (no C++ overload)");
            }
            if (first.is_string()) {
                auto rhs = eval(second);
                return apply_op(op, first.get<std::string>(), rhs);
            }
            auto lhs = eval(first);
            if (second.is_string()) {
                return apply_op(op, lhs, second.get<std::string>());
            }
            auto rhs = eval(second);
            return apply_op(op, lhs, rhs);
        }();
        for (size_t i = 3; i < e.size(); i++) {
            const auto & next = e.at(i);
            if (next.is_string()) {
                acc = apply_op(op, acc, next.get<std::string>());
            } else {
                auto rhs = eval(next);
                acc = apply_op(op, acc, rhs);
            }
        }
        return acc;
    }

    common_peg_parser eval_let(const common_json & e) {
        expect_args(e, 2, 2);
        const auto & bindings = e.at(1);
        if (!bindings.is_array()) {
            throw harness_error("peg expression 'let': bindings must be an array of [name, expr]");
        }
        const size_t depth = env.size();
        for (const auto & b : bindings) {
            if (!b.is_array() || b.size() != 2 || !b.at(0).is_string()) {
                throw harness_error("peg expression 'let': each binding must be [name, expr]");
            }
            auto id = eval(b.at(1)).id();
            env.emplace_back(b.at(0).get<std::string>(), id);
        }
        auto result = eval(e.at(2));
        env.resize(depth);
        return result;
    }

    common_peg_parser eval_var(const common_json & e) {
        expect_args(e, 1, 1);
        const std::string name = str_arg(e, 1);
        for (auto it = env.rbegin(); it != env.rend(); ++it) {
            if (it->first == name) {
                return common_peg_parser(it->second, p);
            }
        }
        throw harness_error("peg expression 'var': unbound name '" + name + "'");
    }

    common_peg_parser eval_form(const std::string & op, const common_json & e) {
        // --- structure -----------------------------------------------------------------------
        if (op == "let") return eval_let(e);
        if (op == "var") return eval_var(e);
        if (op == "+" || op == "|" || op == "<<") return eval_operator(op, e);

        // --- primitives ----------------------------------------------------------------------
        if (op == "eps")   { expect_args(e, 0, 0); return p.eps(); }
        if (op == "start") { expect_args(e, 0, 0); return p.start(); }
        if (op == "end")   { expect_args(e, 0, 0); return p.end(); }
        if (op == "any")   { expect_args(e, 0, 0); return p.any(); }
        if (op == "space") { expect_args(e, 0, 0); return p.space(); }
        if (op == "rest")  { expect_args(e, 0, 0); return p.rest(); }
        if (op == "lit" || op == "literal") { expect_args(e, 1, 1); return p.literal(str_arg(e, 1)); }
        if (op == "chars") {
            expect_args(e, 1, 3);
            return p.chars(str_arg(e, 1), int_arg(e, 2, 1), int_arg(e, 3, -1));
        }
        if (op == "until") { expect_args(e, 1, 1); return p.until(str_arg(e, 1)); }
        if (op == "until_one_of") { expect_args(e, 1, 1); return p.until_one_of(strings_arg(e, 1)); }
        if (op == "string_content") {
            expect_args(e, 1, 1);
            const auto d = str_arg(e, 1);
            if (d.size() != 1) {
                throw harness_error("peg expression 'string_content': the delimiter must be one byte");
            }
            return p.string_content(d[0]);
        }
        if (op == "ref") { expect_args(e, 1, 1); return p.ref(str_arg(e, 1)); }

        // --- combinators ---------------------------------------------------------------------
        if (op == "seq" || op == "sequence") {
            if (e.size() == 1) return p.sequence();
            return p.sequence(eval_list(e, 1));
        }
        if (op == "choice") {
            if (e.size() == 1) return p.choice();
            return p.choice(eval_list(e, 1));
        }
        if (op == "repeat") {
            expect_args(e, 2, 3);
            auto child = eval(e.at(1));
            if (e.size() == 3) return p.repeat(child, int_arg(e, 2, 0));
            return p.repeat(child, int_arg(e, 2, 0), int_arg(e, 3, -1));
        }
        if (op == "opt" || op == "optional")       { expect_args(e, 1, 1); return p.optional(eval(e.at(1))); }
        if (op == "star" || op == "zero_or_more")  { expect_args(e, 1, 1); return p.zero_or_more(eval(e.at(1))); }
        if (op == "plus" || op == "one_or_more")   { expect_args(e, 1, 1); return p.one_or_more(eval(e.at(1))); }
        if (op == "peek")                          { expect_args(e, 1, 1); return p.peek(eval(e.at(1))); }
        if (op == "not" || op == "negate")         { expect_args(e, 1, 1); return p.negate(eval(e.at(1))); }
        if (op == "atomic")                        { expect_args(e, 1, 1); return p.atomic(eval(e.at(1))); }
        if (op == "tag") {
            expect_args(e, 2, 2);
            auto tag = str_arg(e, 1);
            return p.tag(tag, eval(e.at(2)));
        }
        if (op == "rule" || op == "trigger_rule") {
            expect_args(e, 2, op == "rule" ? 3 : 2);
            auto name    = str_arg(e, 1);
            auto child   = eval(e.at(2));
            bool trigger = op == "trigger_rule" || bool_arg(e, 3, false);
            return p.rule(name, child, trigger);
        }
        if (op == "rule_fn" || op == "trigger_rule_fn") {
            // the std::function overload: returns the existing rule's ref without evaluating the
            // body when the name is taken, and registers a placeholder first so the body can recurse
            expect_args(e, 2, op == "rule_fn" ? 3 : 2);
            auto name    = str_arg(e, 1);
            bool trigger = op == "trigger_rule_fn" || bool_arg(e, 3, false);
            const common_json body = e.at(2);
            return p.rule(name, [&]() { return eval(body); }, trigger);
        }
        if (op == "schema") {
            expect_args(e, 3, 4);
            auto child = eval(e.at(1));
            return p.schema(child, str_arg(e, 2), e.at(3), bool_arg(e, 4, false));
        }
        if (op == "gbnf") {
            expect_args(e, 2, 2);
            auto child = eval(e.at(1));
            return p.gbnf(child, str_arg(e, 2));
        }
        if (op == "ac") {
            expect_args(e, 2, 2);
            auto child = eval(e.at(1));
            return p.ac(child, strings_arg(e, 2));
        }

        // --- helpers that build rules ----------------------------------------------------------
        if (op == "double_quoted_string") { expect_args(e, 0, 0); return p.double_quoted_string(); }
        if (op == "single_quoted_string") { expect_args(e, 0, 0); return p.single_quoted_string(); }
        if (op == "quoted_string")        { expect_args(e, 0, 0); return p.quoted_string(); }
        if (op == "json")                 { expect_args(e, 0, 0); return p.json(); }
        if (op == "json_object")          { expect_args(e, 0, 0); return p.json_object(); }
        if (op == "json_string")          { expect_args(e, 0, 0); return p.json_string(); }
        if (op == "json_array")           { expect_args(e, 0, 0); return p.json_array(); }
        if (op == "json_number")          { expect_args(e, 0, 0); return p.json_number(); }
        if (op == "json_bool")            { expect_args(e, 0, 0); return p.json_bool(); }
        if (op == "json_null")            { expect_args(e, 0, 0); return p.json_null(); }
        if (op == "json_member") {
            expect_args(e, 2, 2);
            auto key = str_arg(e, 1);
            return p.json_member(key, eval(e.at(2)));
        }
        if (op == "python_value")  { expect_args(e, 0, 0); return p.python_value(); }
        if (op == "python_dict")   { expect_args(e, 0, 0); return p.python_dict(); }
        if (op == "python_string") { expect_args(e, 0, 0); return p.python_string(); }
        if (op == "python_array")  { expect_args(e, 0, 0); return p.python_array(); }
        if (op == "python_number") { expect_args(e, 0, 0); return p.python_number(); }
        if (op == "python_bool")   { expect_args(e, 0, 0); return p.python_bool(); }
        if (op == "python_null")   { expect_args(e, 0, 0); return p.python_null(); }
        if (op == "marker")        { expect_args(e, 0, 0); return p.marker(); }

        return eval_chat_form(op, e);
    }

    // common_chat_peg_builder additions
    common_peg_parser eval_chat_form(const std::string & op, const common_json & e) {
        using tag_fn = common_peg_parser (common_chat_peg_builder::*)(const common_peg_parser &);
        static const std::map<std::string, tag_fn> tag_forms = {
            { "reasoning_block",       &common_chat_peg_builder::reasoning_block },
            { "reasoning",             &common_chat_peg_builder::reasoning },
            { "content",               &common_chat_peg_builder::content },
            { "tool",                  &common_chat_peg_builder::tool },
            { "tool_open",             &common_chat_peg_builder::tool_open },
            { "tool_close",            &common_chat_peg_builder::tool_close },
            { "tool_id",               &common_chat_peg_builder::tool_id },
            { "tool_name",             &common_chat_peg_builder::tool_name },
            { "tool_args",             &common_chat_peg_builder::tool_args },
            { "tool_arg",              &common_chat_peg_builder::tool_arg },
            { "tool_arg_open",         &common_chat_peg_builder::tool_arg_open },
            { "tool_arg_close",        &common_chat_peg_builder::tool_arg_close },
            { "tool_arg_name",         &common_chat_peg_builder::tool_arg_name },
            { "tool_arg_value",        &common_chat_peg_builder::tool_arg_value },
            { "tool_arg_string_value", &common_chat_peg_builder::tool_arg_string_value },
            { "tool_arg_json_value",   &common_chat_peg_builder::tool_arg_json_value },
        };
        auto tf = tag_forms.find(op);
        if (tf != tag_forms.end()) {
            expect_args(e, 1, 1);
            auto child = eval(e.at(1));
            return (p.*(tf->second))(child);
        }
        if (op == "tag_with_safe_content") {
            expect_args(e, 3, 3);
            auto tag_name = str_arg(e, 1);
            auto marker   = str_arg(e, 2);
            return p.tag_with_safe_content(tag_name, marker, eval(e.at(3)));
        }
        if (op == "permute") {
            expect_args(e, 2, 2);
            auto prefix = str_arg(e, 1);
            const auto & list = e.at(2);
            if (!list.is_array()) {
                throw harness_error("peg expression 'permute': argument 2 must be an array of expressions");
            }
            std::vector<common_peg_parser> parsers;
            for (const auto & item : list) {
                parsers.push_back(eval(item));
            }
            return p.permute(prefix, parsers);
        }
        if (op == "prefix") {
            expect_args(e, 1, 2);
            return p.prefix(str_arg(e, 1), e.size() > 2 ? str_arg(e, 2) : std::string());
        }
        if (op == "optspace") { expect_args(e, 1, 1); return p.optspace(str_arg(e, 1)); }
        if (op == "standard_json_tools") {
            expect_args(e, 1, 1);
            const auto & o = e.at(1);
            return p.standard_json_tools(
                req_string_or(o, "section_start", ""), req_string_or(o, "section_end", ""),
                req_field(o, "tools"), req_bool_or(o, "parallel_tool_calls", false),
                req_bool_or(o, "force_tool_calls", false), req_string_or(o, "name_key", ""),
                req_string_or(o, "args_key", ""), req_bool_or(o, "array_wrapped", false),
                req_bool_or(o, "function_is_key", false), req_string_or(o, "call_id_key", ""),
                req_string_or(o, "gen_call_id_key", ""),
                req_has(o, "parameters_order") ? o.at("parameters_order").get<std::vector<std::string>>()
                                               : std::vector<std::string>{},
                req_bool_or(o, "accept_openai_wrapper", false));
        }
        if (op == "standard_constructed_tools") {
            expect_args(e, 1, 1);
            const auto & o = e.at(1);
            std::map<std::string, std::string> markers;
            const auto & m = req_field(o, "markers");
            if (!m.is_object()) {
                throw harness_error("standard_constructed_tools: 'markers' must be an object of strings");
            }
            for (const auto & [k, v] : m.items()) {
                markers[k] = v.get<std::string>();
            }
            return p.standard_constructed_tools(markers, req_field(o, "tools"),
                                                req_bool_or(o, "parallel_tool_calls", false),
                                                req_bool_or(o, "force_tool_calls", false));
        }
        if (op == "python_style_tool_calls") {
            expect_args(e, 1, 1);
            const auto & o = e.at(1);
            return p.python_style_tool_calls(req_field(o, "tools"), req_bool_or(o, "parallel_tool_calls", false),
                                             req_bool_or(o, "allow_json_literals", false));
        }
        throw harness_error("unknown peg expression '" + op + "'");
    }
};

}  // namespace

common_peg_arena peg_build_from_expr(const common_json & expr) {
    common_chat_peg_builder builder;
    expr_evaluator ev(builder);
    auto root = ev.eval(expr);
    builder.set_root(root);
    return builder.build();
}

common_peg_arena peg_arena_from_request(const common_json & req) {
    if (req_has(req, "arena")) {
        const auto & a = req.at("arena");
        if (a.is_string()) {
            return common_peg_arena::from_json(common_json::parse(a.get<std::string>()));
        }
        return common_peg_arena::from_json(a);
    }
    if (req_has(req, "expr")) {
        return peg_build_from_expr(req.at("expr"));
    }
    throw harness_error("request needs 'arena' (to_json object or save() text) or 'expr' (builder expression)");
}

void peg_put_arena(common_json & result, const common_peg_arena & arena) {
    result["arena"]      = arena.to_json();
    result["arena_text"] = arena.save();
}
