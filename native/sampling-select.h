// The sampler's fast path: the few candidates a top-k chain or greedy can choose, found straight
// from one logits row, without writing n_vocab llama_token_data entries (1.8 MB for Qwen's
// 151,936 tokens) and partially sorting them. `changed` holds the ids logit bias and penalties
// changed at this step, with their changed values; `skip` has bit id set for exactly those ids
// (empty: none), so the row's stale value for them is ignored. A bitmap: 19 KB that stays in
// cache, where an id-indexed int array (600 KB) cost a cache miss per candidate.
#pragma once

#include <llama.h>

#include <cstdint>
#include <vector>

namespace lp {

// The k largest of the row (n logits, changed ids by their changed values) into *out, unordered;
// all of them when fewer than k. Which of several equal values at the k-th place are kept is
// unspecified, as in llama.cpp's std::partial_sort.
void SelectTopK(const float* logits, int32_t n, int32_t k, const std::vector<uint64_t>& skip,
                const std::vector<llama_token_data>& changed, std::vector<llama_token_data>* out);

// llama_sampler_greedy's choice over the same values: the first maximum in id order.
llama_token ArgmaxFirst(const float* logits, int32_t n, const std::vector<uint64_t>& skip,
                        const std::vector<llama_token_data>& changed);

}  // namespace lp
