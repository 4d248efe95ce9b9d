// Fast-forward: after a sampled token, the text the grammar forces (grammar/forced.h) turned into
// tokens the way the model's tokenizer spells it in context, accepted into the sampler and queued
// to be decoded in the same batch as the sampled token (one step instead of one step each).
// llama.cpp has no counterpart (llguidance's fast-forward tokens are the model).
#pragma once

#include <llama.h>

#include <string>
#include <vector>

#include "native-error.h"

namespace lp {

class Sampler;
struct GenerationJob;

// Forced text longer than this is taken in pieces (the next piece after the next sampled token).
constexpr size_t kForcedMaxBytes = 512;

// After `sampled` was accepted and emitted: the forced tokens, at most maxTokens, accepted into
// the sampler, emitted (marked forced) and left in job.forced for the next batch. The last token
// of the tokenized run is left to the model (it may merge with what follows), and so are EOG and
// stop tokens. False with *error set when the grammar fails.
bool QueueForced(GenerationJob& job, const llama_vocab* vocab, llama_token sampled, size_t maxTokens, NativeError* error);

// Before the first sample: the text the grammar forces right after the prompt (whose last token is
// `last`), as the next batch (job.pending and job.forced, all emitted marked forced) instead of a
// sampled token. *started false: nothing forced, sample as usual.
bool StartForced(GenerationJob& job, const llama_vocab* vocab, llama_token last, size_t maxTokens, bool* started, NativeError* error);

// The spent reasoning budget's forced tokens (reasoning-budget.h), as far as maxTokens and the
// grammar allow, as the next batch (job.pending and job.forced, emitted marked forced) instead of
// a sampled token. A token the grammar refuses ends the forcing (the model goes on). *started
// false: nothing forced, sample as usual.
bool StartBudgetForced(GenerationJob& job, const llama_vocab* vocab, size_t maxTokens, bool* started, NativeError* error);

}  // namespace lp
