#include "seq-state.h"

#include <cstdio>
#include <cstring>

namespace lp {

namespace {

constexpr char kMagic[8] = {'L', 'P', 'S', 'E', 'Q', 'S', 'T', '1'};
constexpr uint32_t kVersion = 1;

// FNV-1a over 64-bit words (then the tail bytes): a corruption check fast enough for GB states.
uint64_t Checksum(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const uint64_t prime = 0x100000001b3ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * prime;
  }
  for (; i < n; i++) h = (h ^ p[i]) * prime;
  return h;
}

struct Writer {
  std::vector<uint8_t> out;
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  void U32(uint32_t v) { Bytes(&v, 4); }
  void U64(uint64_t v) { Bytes(&v, 8); }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(s.data(), s.size());
  }
};

struct Reader {
  const std::vector<uint8_t>& in;
  size_t at = 0;
  bool Bytes(void* p, size_t n) {
    if (in.size() - at < n) return false;
    std::memcpy(p, in.data() + at, n);
    at += n;
    return true;
  }
  bool U32(uint32_t* v) { return Bytes(v, 4); }
  bool U64(uint64_t* v) { return Bytes(v, 8); }
  bool Str(std::string* s) {
    uint32_t n;
    if (!U32(&n) || in.size() - at < n) return false;
    s->assign(reinterpret_cast<const char*>(in.data() + at), n);
    at += n;
    return true;
  }
};

}  // namespace

std::string ModelIdentity(const llama_model* model) {
  char desc[256];
  llama_model_desc(model, desc, sizeof(desc));
  char name[256] = "";
  llama_model_meta_val_str(model, "general.name", name, sizeof(name));
  const llama_vocab* vocab = llama_model_get_vocab(model);
  return std::string(desc) + ", " + std::to_string(llama_model_n_params(model)) + " parameters, " + std::to_string(llama_model_size(model)) +
         " bytes, vocabulary " + std::to_string(llama_vocab_n_tokens(vocab)) + ", " + std::to_string(llama_model_n_layer(model)) + " layers of " +
         std::to_string(llama_model_n_embd(model)) + ", \"" + name + "\"";
}

std::vector<uint8_t> EncodeSeqState(const SeqStateMeta& meta, const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state) {
  Writer w;
  w.Bytes(kMagic, sizeof(kMagic));
  w.U32(kVersion);
  w.Str(meta.model);
  w.U32(meta.swaFull ? 1 : 0);
  w.U32(meta.contextSize);
  w.U32(static_cast<uint32_t>(tokens.size()));
  w.Bytes(tokens.data(), tokens.size() * sizeof(llama_token));
  w.U64(state.size());
  w.Bytes(state.data(), state.size());
  w.U64(Checksum(w.out.data(), w.out.size()));
  return std::move(w.out);
}

NativeError DecodeSeqState(const std::vector<uint8_t>& file, const SeqStateMeta& expect, uint32_t maxTokens,
                           std::vector<llama_token>* tokens, std::vector<uint8_t>* state) {
  const NativeError truncated{"ERR_STATE_INVALID", "the state file is truncated (" + std::to_string(file.size()) + " bytes)"};
  char magic[8];
  Reader r{file};
  if (!r.Bytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return {"ERR_STATE_INVALID", "not a llamapeg sequence state file"};
  if (file.size() < 8 + 8) return truncated;
  uint64_t stored;
  std::memcpy(&stored, file.data() + file.size() - 8, 8);
  // The checksum first: every later field is then what was written.
  if (Checksum(file.data(), file.size() - 8) != stored) {
    return {"ERR_STATE_INVALID", "the state file is corrupted or truncated (checksum mismatch over " + std::to_string(file.size()) + " bytes)"};
  }
  uint32_t version, swaFull, contextSize, nTokens;
  SeqStateMeta meta;
  if (!r.U32(&version)) return truncated;
  if (version != kVersion) return {"ERR_STATE_INVALID", "state file version " + std::to_string(version) + " (this build reads " + std::to_string(kVersion) + ")"};
  if (!r.Str(&meta.model) || !r.U32(&swaFull) || !r.U32(&contextSize) || !r.U32(&nTokens)) return truncated;
  if (meta.model != expect.model) {
    return {"ERR_STATE_MISMATCH", "the state was saved from another model (" + meta.model + "); this context's model is " + expect.model};
  }
  if ((swaFull != 0) != expect.swaFull) {
    return {"ERR_STATE_MISMATCH", std::string("the state was saved with swaFull ") + (swaFull ? "true" : "false") + "; this context has swaFull " +
                                      (expect.swaFull ? "true" : "false")};
  }
  if (nTokens >= maxTokens) {
    return {"ERR_STATE_MISMATCH", "the state holds " + std::to_string(nTokens) + " tokens (saved from a sequence of " + std::to_string(contextSize) +
                                      "); a sequence of this context holds " + std::to_string(maxTokens)};
  }
  tokens->resize(nTokens);
  if (!r.Bytes(tokens->data(), nTokens * sizeof(llama_token))) return truncated;
  uint64_t size;
  if (!r.U64(&size) || size != file.size() - 8 - r.at) return truncated;
  state->assign(file.begin() + static_cast<std::ptrdiff_t>(r.at), file.end() - 8);
  return {};
}

NativeError WriteFileAtomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return {"ERR_STATE_INVALID", "cannot write " + tmp};
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return {"ERR_STATE_INVALID", "cannot write " + path};
  }
  return {};
}

NativeError ReadWholeFile(const std::string& path, std::vector<uint8_t>* bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return {"ERR_STATE_INVALID", "cannot open " + path};
  bytes->clear();
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes->insert(bytes->end(), buf, buf + n);
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return {"ERR_STATE_INVALID", "cannot read " + path};
  return {};
}

}  // namespace lp
