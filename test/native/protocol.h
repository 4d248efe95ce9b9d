// Shared helpers for the reference harness: request field access, byte strings that may not be
// valid UTF-8, and the command registry. Everything here throws harness_error on bad input so
// the main loop can answer {ok:false} and keep going.
#pragma once

#include "json.h"

#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct harness_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using harness_command = std::function<common_json(const common_json & request)>;

// name -> handler; filled by the register_* functions of each command file
std::map<std::string, harness_command> & harness_commands();

void register_peg_commands();
void register_schema_commands();
void register_chat_commands();
void register_jinja_commands();
void register_analysis_commands();
void register_stream_commands();
void register_gbnf_commands();

// --- request access ---------------------------------------------------------------------------

const common_json & req_field(const common_json & req, const std::string & key);
bool        req_has(const common_json & req, const std::string & key);
std::string req_string(const common_json & req, const std::string & key);
std::string req_string_or(const common_json & req, const std::string & key, const std::string & def);
bool        req_bool_or(const common_json & req, const std::string & key, bool def);
long long   req_int_or(const common_json & req, const std::string & key, long long def);

// `key` as a UTF-8 string, or `key_b64` as base64 bytes (for inputs that are not valid UTF-8)
std::string req_bytes(const common_json & req, const std::string & key);
bool        req_has_bytes(const common_json & req, const std::string & key);

// --- bytes ------------------------------------------------------------------------------------

bool        is_valid_utf8(const std::string & s);
std::string base64_encode(const std::string & bytes);
std::string base64_decode(const std::string & text);

// Puts `bytes` into obj[key] when it is valid UTF-8; otherwise puts a U+FFFD-sanitized copy there
// and the exact bytes, base64, into obj[key + "_b64"].
void put_bytes(common_json & obj, const std::string & key, const std::string & bytes);

// Captures what the reference writes to stderr (fd 2) while it lives: its debug traces and
// grammar parse errors, which it prints instead of returning.
class stderr_capture {
  public:
    stderr_capture();
    ~stderr_capture();
    stderr_capture(const stderr_capture &) = delete;
    stderr_capture & operator=(const stderr_capture &) = delete;
    // restores stderr and returns what was written; later calls return ""
    std::string finish();

  private:
    FILE * file  = nullptr;
    int    saved = -1;
};
