// Sequence state files: one sequence's tokens and llama.cpp state (llama_state_seq_get_data,
// all of it: KV cells, recurrent state) with what decides whether another context can take it:
// the model's identity, swa_full, the token count (the target's sequence must hold it), and a
// checksum over everything. llama.cpp's own llama_state_seq_save_file writes tokens + state with
// no model check and no checksum; we validate before llama.cpp ever reads the bytes, so a file
// from another model, a truncated or a corrupted file is a coded error, not undefined state.
// The checksum detects accidents (truncation, flipped bytes), not forgery.
#pragma once

#include <llama.h>

#include <cstdint>
#include <string>
#include <vector>

#include "native-error.h"

namespace lp {

struct SeqStateMeta {
  std::string model;        // ModelIdentity()
  bool swaFull = true;
  uint32_t contextSize = 0; // of the sequence that saved it (informational)
};

// Describes the model: architecture and size, parameter count, vocabulary, shape, general.name.
// Models that differ only in their weight values are not told apart.
std::string ModelIdentity(const llama_model* model);

std::vector<uint8_t> EncodeSeqState(const SeqStateMeta& meta, const std::vector<llama_token>& tokens, const std::vector<uint8_t>& state);

// Checks the file against `expect` (model, swaFull) and `maxTokens` (the target sequence's
// size). ERR_STATE_INVALID: not a state file, truncated, checksum; ERR_STATE_MISMATCH: another
// model, another swaFull, more tokens than the sequence holds.
NativeError DecodeSeqState(const std::vector<uint8_t>& file, const SeqStateMeta& expect, uint32_t maxTokens,
                           std::vector<llama_token>* tokens, std::vector<uint8_t>* state);

NativeError WriteFileAtomic(const std::string& path, const std::vector<uint8_t>& bytes);
NativeError ReadWholeFile(const std::string& path, std::vector<uint8_t>* bytes);

}  // namespace lp
