// peg.* commands: build an arena from a builder expression, round-trip its JSON, export GBNF and
// parse text with it, returning the AST arena exactly as the reference holds it.
#include "peg_expr.h"
#include "protocol.h"

#include "chat-peg-parser.h"
#include "json-schema-to-grammar.h"

#include <cstdio>
#include <optional>
#include <string>


namespace {

std::string gbnf_of(const common_peg_arena & arena, const common_json & req) {
    const bool lazy = req_bool_or(req, "lazy", false);
    common_grammar_options options;
    options.dotall = req_bool_or(req, "dotall", false);
    return build_grammar([&](const common_grammar_builder & builder) {
        // chat.cpp registers the tools' schemas first so their $refs resolve; allow the same
        if (req_has(req, "resolve_refs")) {
            for (const auto & schema : req.at("resolve_refs")) {
                auto copy = schema;
                builder.resolve_refs(copy);
            }
        }
        arena.build_grammar(builder, lazy);
    }, options);
}

common_json ast_node_json(const common_peg_ast_node & node) {
    common_json j{
        { "id", node.id },
        { "rule", node.rule },
        { "tag", node.tag },
        { "start", node.start },
        { "end", node.end },
        { "is_partial", node.is_partial },
        { "children", node.children },
    };
    put_bytes(j, "text", std::string(node.text));
    return j;
}

common_json cmd_build(const common_json & req) {
    common_json result = common_json::object();
    auto arena = peg_build_from_expr(req_field(req, "expr"));
    peg_put_arena(result, arena);
    if (req_bool_or(req, "dump", false) && arena.root() != COMMON_PEG_INVALID_PARSER_ID) {
        result["dump"] = arena.dump(arena.root());
    }
    return result;
}

common_json cmd_load(const common_json & req) {
    common_json result = common_json::object();
    peg_put_arena(result, peg_arena_from_request(req));
    return result;
}

common_json cmd_gbnf(const common_json & req) {
    auto arena = peg_arena_from_request(req);
    return common_json{ { "gbnf", gbnf_of(arena, req) } };
}

common_json cmd_parse(const common_json & req) {
    auto arena = peg_arena_from_request(req);
    const std::string input = req_bytes(req, "input");
    const bool debug = req_bool_or(req, "debug", false);

    common_peg_parse_flags flags = COMMON_PEG_PARSE_FLAG_NONE;
    if (req_bool_or(req, "partial", false)) {
        flags |= COMMON_PEG_PARSE_FLAG_LENIENT;
    }
    if (debug) {
        flags |= COMMON_PEG_PARSE_FLAG_DEBUG;
    }
    const long long start = req_int_or(req, "start", 0);
    if (start < 0 || (size_t) start > input.size()) {
        throw harness_error("'start' must be within the input (0.." + std::to_string(input.size()) + ")");
    }

    common_peg_parse_context ctx(input, flags);
    common_peg_parse_result r;
    std::string debug_log;
    {
        std::optional<stderr_capture> capture;
        if (debug) {
            capture.emplace();
        }
        if (req_has(req, "parser_id")) {
            r = arena.parse((common_peg_parser_id) req_int_or(req, "parser_id", 0), ctx, (size_t) start);
        } else {
            r = arena.parse(ctx, (size_t) start);
        }
        if (capture) {
            debug_log = capture->finish();
        }
    }

    common_json ast = common_json::array();
    for (size_t i = 0; i < ctx.ast.size(); i++) {
        ast.push_back(ast_node_json(ctx.ast.get(i)));
    }
    common_json result{
        { "type", common_peg_parse_result_type_name(r.type) },
        { "start", r.start },
        { "end", r.end },
        { "nodes", r.nodes },
        { "ast", ast },
    };
    if (debug) {
        put_bytes(result, "debug_log", debug_log);
    }
    return result;
}

// tagged_peg_parser: parse_and_extract / parse_anywhere_and_extract -> the last text per tag
common_json cmd_parse_tagged(const common_json & req) {
    tagged_peg_parser parser{ peg_arena_from_request(req) };
    const std::string input = req_bytes(req, "input");
    common_peg_parse_flags extra = req_bool_or(req, "partial", false) ? COMMON_PEG_PARSE_FLAG_LENIENT : COMMON_PEG_PARSE_FLAG_NONE;
    auto r = req_bool_or(req, "anywhere", false) ? parser.parse_anywhere_and_extract(input)
                                                 : parser.parse_and_extract(input, extra);
    common_json tags = common_json::object();
    for (const auto & [tag, text] : r.tags) {
        put_bytes(tags, tag, text);
    }
    return common_json{
        { "type", common_peg_parse_result_type_name(r.result.type) },
        { "start", r.result.start },
        { "end", r.result.end },
        { "tags", tags },
    };
}

common_json cmd_dump(const common_json & req) {
    auto arena = peg_arena_from_request(req);
    const long long id = req_int_or(req, "parser_id", -1);
    const auto target = id >= 0 ? (common_peg_parser_id) id : arena.root();
    if (target == COMMON_PEG_INVALID_PARSER_ID) {
        throw harness_error("arena has no root; pass 'parser_id'");
    }
    return common_json{ { "dump", arena.dump(target) } };
}

}  // namespace

void register_peg_commands() {
    auto & c = harness_commands();
    c["peg.build"] = cmd_build;
    c["peg.load"]  = cmd_load;
    c["peg.gbnf"]  = cmd_gbnf;
    c["peg.parse"] = cmd_parse;
    c["peg.dump"]  = cmd_dump;
    c["peg.parse_tagged"] = cmd_parse_tagged;
}
