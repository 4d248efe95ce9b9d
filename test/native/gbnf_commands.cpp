// grammar.check: llama.cpp's own GBNF parser and matcher (src/llama-grammar.*, what the sampler
// runs), so tests can check that a grammar we emit loads in llama.cpp and accepts what the PEG
// parser accepts.
#include "protocol.h"

#include "llama-grammar.h"

#include <algorithm>
#include <memory>
#include <string>

namespace {

struct grammar_deleter {
    void operator()(llama_grammar * g) const { llama_grammar_free_impl(g); }
};
using grammar_ptr = std::unique_ptr<llama_grammar, grammar_deleter>;

// Feeds `input` one UTF-8 character at a time (a cut character at the end stays pending, as with
// a token that splits it). accepted: the grammar can still continue after every byte of it;
// complete: the grammar can also end there; consumed: bytes fed before it rejected.
common_json match(const llama_grammar & loaded, const std::string & input) {
    grammar_ptr g(llama_grammar_clone_impl(loaded));
    size_t pos = 0;
    bool accepted = true;
    while (pos < input.size()) {
        const auto lead = static_cast<unsigned char>(input[pos]);
        size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
        len = std::min(len, input.size() - pos);
        try {
            llama_grammar_accept_str(*g, input.substr(pos, len));
        } catch (const std::exception &) {
            accepted = false;
            break;
        }
        pos += len;
    }
    bool complete = false;
    if (accepted) {
        for (const auto & stack : llama_grammar_get_stacks(g.get())) {
            complete = complete || stack.empty();
        }
    }
    return common_json{ { "accepted", accepted }, { "complete", complete }, { "consumed", pos } };
}

common_json cmd_check(const common_json & req) {
    const std::string gbnf = req_string(req, "gbnf");
    const std::string root = req_string_or(req, "root", "root");
    grammar_ptr g;
    std::string log;
    {
        stderr_capture capture;
        g.reset(llama_grammar_init_impl(nullptr, gbnf.c_str(), root.c_str(), false, nullptr, 0, nullptr, 0));
        log = capture.finish();
    }
    common_json result{ { "valid", g != nullptr } };
    if (!g) {
        put_bytes(result, "error", log);
        return result;
    }
    common_json results = common_json::array();
    if (req_has(req, "inputs_b64")) {
        for (const auto & in : req.at("inputs_b64")) {
            results.push_back(match(*g, base64_decode(in.get<std::string>())));
        }
    } else if (req_has(req, "inputs")) {
        for (const auto & in : req.at("inputs")) {
            results.push_back(match(*g, in.get<std::string>()));
        }
    }
    result["results"] = results;
    return result;
}

}  // namespace

void register_gbnf_commands() {
    harness_commands()["grammar.check"] = cmd_check;
}
