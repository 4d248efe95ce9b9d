// json_schema.* and grammar.* commands: json_schema_to_grammar and the build_grammar callbacks
// (add_rule / add_schema / resolve_refs) that the PEG arena and the chat layer drive.
#include "peg_expr.h"
#include "protocol.h"

#include "json-schema-to-grammar.h"

#include <string>

namespace {

// `key` as a JSON value, or `key_text` as JSON text (keeps key order that JavaScript objects
// would change, e.g. integer-like property names, and numbers JavaScript cannot hold).
common_json json_arg(const common_json & req, const std::string & key) {
    if (req_has(req, key + "_text")) {
        return common_json::parse(req_string(req, key + "_text"));
    }
    return req_field(req, key);
}

common_json cmd_to_grammar(const common_json & req) {
    const auto schema = json_arg(req, "schema");
    return common_json{ { "gbnf", json_schema_to_grammar(schema, req_bool_or(req, "force_gbnf", false)) } };
}

common_json cmd_info(const common_json & req) {
    auto schema = json_arg(req, "schema");
    common_schema_info info;
    info.resolve_refs(schema);
    return common_json{ { "resolves_to_string", info.resolves_to_string(schema) }, { "resolved", schema } };
}

// ops: ["add_rule", name, body] | ["add_schema", name, schema] | ["resolve_refs", schema]
//    | ["arena", {arena | expr, lazy}]  — run in order inside one build_grammar call
common_json cmd_grammar_build(const common_json & req) {
    const auto & ops = req_field(req, "ops");
    if (!ops.is_array()) {
        throw harness_error("'ops' must be an array");
    }
    common_grammar_options options;
    options.dotall = req_bool_or(req, "dotall", false);
    common_json returns = common_json::array();
    auto gbnf = build_grammar([&](const common_grammar_builder & builder) {
        for (const auto & op : ops) {
            if (!op.is_array() || op.empty() || !op.at(0).is_string()) {
                throw harness_error("each op must be [name, ...args]");
            }
            const std::string name = op.at(0).get<std::string>();
            if (name == "add_rule" && op.size() == 3) {
                returns.push_back(builder.add_rule(op.at(1).get<std::string>(), op.at(2).get<std::string>()));
            } else if (name == "add_schema" && op.size() == 3) {
                returns.push_back(builder.add_schema(op.at(1).get<std::string>(), op.at(2)));
            } else if (name == "resolve_refs" && op.size() == 2) {
                auto schema = op.at(1);
                builder.resolve_refs(schema);
                returns.push_back(schema);
            } else if (name == "arena" && op.size() == 2) {
                auto arena = peg_arena_from_request(op.at(1));
                arena.build_grammar(builder, req_bool_or(op.at(1), "lazy", false));
                returns.push_back(nullptr);
            } else {
                throw harness_error("unknown grammar op or wrong arity: " + op.dump());
            }
        }
    }, options);
    return common_json{ { "gbnf", gbnf }, { "returns", returns } };
}

}  // namespace

void register_schema_commands() {
    auto & c = harness_commands();
    c["json_schema.to_grammar"] = cmd_to_grammar;
    c["json_schema.info"]       = cmd_info;
    c["grammar.build"]          = cmd_grammar_build;
}
