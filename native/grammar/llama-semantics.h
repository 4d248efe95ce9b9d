// llama.cpp's grammar matching rules, restated (its versions are file-static in llama-grammar.cpp).
// Everything the mask engine and our accept do must agree with llama_grammar_apply_impl and
// llama_grammar_accept_token bit for bit, quirks included: these are the places where it is decided.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "llama-grammar.h"

namespace lp::grammar {

using Elem = llama_grammar_element;

inline bool IsEndOfSequence(const Elem* pos) {
  return pos->type == LLAMA_GRETYPE_END || pos->type == LLAMA_GRETYPE_ALT;
}

inline bool IsCharTop(const Elem* pos) {
  return pos->type == LLAMA_GRETYPE_CHAR || pos->type == LLAMA_GRETYPE_CHAR_NOT || pos->type == LLAMA_GRETYPE_CHAR_ANY;
}

inline bool IsTokenTop(const Elem* pos) {
  return pos->type == LLAMA_GRETYPE_TOKEN || pos->type == LLAMA_GRETYPE_TOKEN_NOT;
}

// llama_grammar_match_char: does `chr` satisfy the char range at pos; second = element after it.
inline std::pair<bool, const Elem*> MatchChar(const Elem* pos, uint32_t chr) {
  bool found = false;
  const bool positive = pos->type == LLAMA_GRETYPE_CHAR || pos->type == LLAMA_GRETYPE_CHAR_ANY;
  do {
    if (pos[1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER) {
      found = found || (pos->value <= chr && chr <= pos[1].value);
      pos += 2;
    } else if (pos->type == LLAMA_GRETYPE_CHAR_ANY) {
      found = true;
      pos += 1;
    } else {
      found = found || pos->value == chr;
      pos += 1;
    }
  } while (pos->type == LLAMA_GRETYPE_CHAR_ALT);
  return {found == positive, pos};
}

// llama_grammar_match_partial_char: could some completion of the partial sequence satisfy pos.
// (Conservative for negated classes: [^x] with x in the completion range says no.)
inline bool MatchPartialChar(const Elem* pos, uint32_t value, int remain) {
  const bool positive = pos->type == LLAMA_GRETYPE_CHAR || pos->type == LLAMA_GRETYPE_CHAR_ANY;
  if (remain < 0 || (remain == 1 && value < 2)) return false;
  uint32_t low = value << (remain * 6);
  uint32_t high = low | ((1u << (remain * 6)) - 1);
  if (low == 0) {
    if (remain == 2) {
      low = 1u << 11;
    } else if (remain == 3) {
      low = 1u << 16;
    }
  }
  do {
    if (pos[1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER) {
      if (pos->value <= high && low <= pos[1].value) return positive;
      pos += 2;
    } else if (pos->type == LLAMA_GRETYPE_CHAR_ANY) {
      return true;
    } else {
      if (low <= pos->value && pos->value <= high) return positive;
      pos += 1;
    }
  } while (pos->type == LLAMA_GRETYPE_CHAR_ALT);
  return !positive;
}

inline bool MatchToken(const Elem* pos, int32_t token) {
  if (pos->type == LLAMA_GRETYPE_TOKEN) return pos->value == static_cast<uint32_t>(token);
  if (pos->type == LLAMA_GRETYPE_TOKEN_NOT) return pos->value != static_cast<uint32_t>(token);
  return false;
}

// llama.cpp's decode_utf8(piece, partial): code points (without the terminating 0 llama appends)
// and the partial state after the piece. Reads the piece as a C string (stops at a NUL byte);
// continuation bytes are validated only while finishing the carried partial sequence; an invalid
// sequence yields no code points and remain -1 (which every grammar position rejects).
struct Decoded {
  std::vector<uint32_t> codePoints;
  uint32_t value = 0;
  int remain = 0;
};

inline Decoded DecodeLikeLlama(const std::string& src, uint32_t partialValue, int partialRemain) {
  static const int kLookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
  Decoded out;
  const char* pos = src.c_str();
  uint32_t value = partialValue;
  int remain = partialRemain;
  while (*pos != 0 && remain > 0) {
    uint8_t next = static_cast<uint8_t>(*pos);
    if ((next >> 6) != 2) {  // invalid: llama.cpp's list is just its terminator
      out.codePoints.clear();
      out.value = 0;
      out.remain = -1;
      return out;
    }
    value = (value << 6) + (next & 0x3F);
    ++pos;
    --remain;
  }
  if (partialRemain > 0 && remain == 0) out.codePoints.push_back(value);
  while (*pos != 0) {
    uint8_t first = static_cast<uint8_t>(*pos);
    remain = kLookup[first >> 4] - 1;
    if (remain < 0) {
      out.codePoints.clear();
      out.value = 0;
      out.remain = remain;
      return out;
    }
    uint8_t mask = static_cast<uint8_t>((1 << (7 - remain)) - 1);
    value = first & mask;
    ++pos;
    while (*pos != 0 && remain > 0) {
      value = (value << 6) + (static_cast<uint8_t>(*pos) & 0x3F);
      ++pos;
      --remain;
    }
    if (remain == 0) out.codePoints.push_back(value);
  }
  out.value = value;
  out.remain = remain;
  return out;
}

// The same decoder, one byte at a time (for walks over the vocabulary trie). `validate` is true
// only while the partial sequence carried over from the previous token is being finished.
struct Utf8Walk {
  uint32_t value = 0;
  int8_t remain = 0;
  bool validate = false;
};

enum class ByteStep : uint8_t { kPartial, kComplete, kInvalid };

inline ByteStep StepByte(Utf8Walk* s, uint8_t b) {
  static const int8_t kLookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
  if (s->remain > 0) {
    if (s->validate && (b >> 6) != 2) return ByteStep::kInvalid;
    s->value = (s->value << 6) + (b & 0x3F);
    if (--s->remain == 0) {
      s->validate = false;
      return ByteStep::kComplete;
    }
    return ByteStep::kPartial;
  }
  int n = kLookup[b >> 4] - 1;
  if (n < 0) return ByteStep::kInvalid;
  s->value = b & ((1u << (7 - n)) - 1);
  if (n == 0) return ByteStep::kComplete;
  s->remain = static_cast<int8_t>(n);
  return ByteStep::kPartial;
}

}  // namespace lp::grammar
