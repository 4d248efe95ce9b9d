// Forced text (forced.h): walks the stack set one code point at a time while every stack agrees.
#include "forced.h"

#include <algorithm>

#include "llama-vocab.h"

namespace lp::grammar {
namespace {

// The single code point the character element at pos admits (its alternatives included), or 0.
uint32_t SingleCodePoint(const Elem* pos) {
  if (pos->type != LLAMA_GRETYPE_CHAR) return 0;  // CHAR_NOT, CHAR_ANY admit many
  uint32_t cp = 0;
  do {
    uint32_t lo = pos->value, hi = pos->value;
    if (pos[1].type == LLAMA_GRETYPE_CHAR_RNG_UPPER) {
      hi = pos[1].value;
      pos += 2;
    } else {
      pos += 1;
    }
    if (lo != hi || lo == 0 || (cp != 0 && cp != lo)) return 0;  // a pieces never decodes to 0
    cp = lo;
  } while (pos->type == LLAMA_GRETYPE_CHAR_ALT);
  return cp;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::vector<llama_token> Tokenize(const llama_vocab* vocab, const std::string& text, bool parseSpecial) {
  std::vector<llama_token> out(text.size() + 8);
  int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), false, parseSpecial);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), false, parseSpecial);
  }
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

// The tokens at the end of `tokens` whose pieces (as the grammar reads them) spell exactly
// `forced`; false when a token straddles its start or the text differs.
bool Suffix(const llama_vocab* vocab, const std::vector<llama_token>& tokens, const std::string& forced, std::vector<llama_token>* out) {
  size_t acc = 0;
  size_t i = tokens.size();
  while (i > 0 && acc < forced.size()) acc += vocab->token_to_piece(tokens[--i]).size();
  if (acc != forced.size()) return false;
  std::string spelled;
  for (size_t k = i; k < tokens.size(); k++) spelled += vocab->token_to_piece(tokens[k]);
  if (spelled != forced) return false;
  out->assign(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.end());
  return true;
}


}  // namespace

uint32_t ForcedCodePoint(const StackEngine& engine, SetId set) {
  if (set == StackEngine::kDead || engine.HasEmpty(set) || engine.HasBottom(set) || engine.HasTokenTop(set)) return 0;
  uint32_t cp = 0;
  for (const StackId* s = engine.SetBegin(set); s != engine.SetEnd(set); s++) {
    const Elem* top = engine.Top(*s);
    if (!IsCharTop(top)) return 0;
    uint32_t c = SingleCodePoint(top);
    if (c == 0 || (cp != 0 && c != cp)) return 0;
    cp = c;
  }
  // Code points llama.cpp's decoder cannot produce from valid UTF-8 (surrogates, past U+10FFFF)
  // are left to the model: no token spells them.
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return cp;
}

SetId ForcedRun(StackEngine* engine, SetId set, size_t maxBytes, std::string* out) {
  size_t used = 0;
  while (true) {
    uint32_t cp = ForcedCodePoint(*engine, set);
    if (cp == 0 || used + Utf8Length(cp) > maxBytes) return set;
    SetId next = engine->Next(set, cp);
    if (next == StackEngine::kDead) return set;  // (a limit was hit: the caller's accept reports it)
    AppendUtf8(cp, out);
    used += Utf8Length(cp);
    set = next;
  }
}

std::vector<llama_token> TokenizeForced(const llama_vocab* vocab, const std::string& before, const std::string& forced,
                                        bool (*renderable)(const llama_vocab*, llama_token, const void*), const void* arg) {
  std::vector<llama_token> out;
  if (forced.empty()) return out;
  // Special tokens parsed first (a template's markers are single tokens to its tokenizer); plain
  // text where that gives a token the output would not render.
  for (bool parseSpecial : {true, false}) {
    for (bool inContext : {true, false}) {
      if (inContext && before.empty()) continue;
      std::vector<llama_token> all = Tokenize(vocab, inContext ? before + forced : forced, parseSpecial);
      if (!Suffix(vocab, all, forced, &out)) continue;
      bool ok = true;
      for (llama_token t : out) ok = ok && renderable(vocab, t, arg);
      if (ok) return out;
    }
  }
  out.clear();
  return out;
}

}  // namespace lp::grammar
