#include "protocol.h"

#include "base64.hpp"

#include <unistd.h>

std::map<std::string, harness_command> & harness_commands() {
    static std::map<std::string, harness_command> commands;
    return commands;
}

const common_json & req_field(const common_json & req, const std::string & key) {
    if (!req.is_object() || !req.contains(key)) {
        throw harness_error("missing field '" + key + "'");
    }
    return req.at(key);
}

bool req_has(const common_json & req, const std::string & key) {
    return req.is_object() && req.contains(key) && !req.at(key).is_null();
}

std::string req_string(const common_json & req, const std::string & key) {
    const auto & v = req_field(req, key);
    if (!v.is_string()) {
        throw harness_error("field '" + key + "' must be a string");
    }
    return v.get<std::string>();
}

std::string req_string_or(const common_json & req, const std::string & key, const std::string & def) {
    return req_has(req, key) ? req_string(req, key) : def;
}

bool req_bool_or(const common_json & req, const std::string & key, bool def) {
    if (!req_has(req, key)) {
        return def;
    }
    const auto & v = req.at(key);
    if (!v.is_boolean()) {
        throw harness_error("field '" + key + "' must be a boolean");
    }
    return v.get<bool>();
}

long long req_int_or(const common_json & req, const std::string & key, long long def) {
    if (!req_has(req, key)) {
        return def;
    }
    const auto & v = req.at(key);
    if (!v.is_number_integer()) {
        throw harness_error("field '" + key + "' must be an integer");
    }
    return v.get<long long>();
}

bool req_has_bytes(const common_json & req, const std::string & key) {
    return req_has(req, key) || req_has(req, key + "_b64");
}

std::string req_bytes(const common_json & req, const std::string & key) {
    if (req_has(req, key + "_b64")) {
        return base64_decode(req_string(req, key + "_b64"));
    }
    return req_string(req, key);
}

bool is_valid_utf8(const std::string & s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2; cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3; cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4; cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) {
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (cc & 0x3F);
        }
        // overlong forms, surrogates and out-of-range code points are not valid UTF-8 either
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
            return false;
        }
        i += len;
    }
    return true;
}

std::string base64_encode(const std::string & bytes) {
    return base64::encode(bytes);
}

std::string base64_decode(const std::string & text) {
    try {
        return base64::decode(text);
    } catch (const std::exception & e) {
        throw harness_error(std::string("invalid base64: ") + e.what());
    }
}

void put_bytes(common_json & obj, const std::string & key, const std::string & bytes) {
    if (is_valid_utf8(bytes)) {
        obj[key] = bytes;
        return;
    }
    // dump_safe replaces bad bytes; parsing its output back gives the sanitized string
    obj[key] = common_json::parse(common_json::make(bytes).dump_safe()).get<std::string>();
    obj[key + "_b64"] = base64_encode(bytes);
}

stderr_capture::stderr_capture() {
    fflush(stderr);
    file  = tmpfile();
    saved = file ? dup(STDERR_FILENO) : -1;
    if (saved >= 0) {
        dup2(fileno(file), STDERR_FILENO);
    }
}

stderr_capture::~stderr_capture() {
    finish();
}

std::string stderr_capture::finish() {
    fflush(stderr);
    std::string text;
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
        saved = -1;
    }
    if (file) {
        rewind(file);
        char   buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), file)) > 0) {
            text.append(buf, n);
        }
        fclose(file);
        file = nullptr;
    }
    return text;
}
