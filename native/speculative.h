// Speculative decoding: prompt lookup (n-gram drafts, no second model) or a draft model (a second,
// small GGUF with the same vocabulary, decoding its own greedy draft in a context of its own). After each sampled token the
// sequence's history (prompt + output) is searched for the most recent earlier occurrence of its
// last n tokens; the tokens that followed it there are the draft. The draft is decoded in the same
// batch as the sampled token, with logits at every position, and kept as far as the target's own
// sampler, run on those logits in order, produces it token for token (so greedy and seeded output
// is the output without a draft, wherever a batch computes the same logits as one-token steps).
// Mirrors llama.cpp's common_ngram_simple_draft (common/ngram-map.cpp) for the draft and
// common_sampler_sample_and_accept_n (common/sampling.cpp) for the verification; the decode
// loop's part is ContextCore::{TrimDraft, AddDraft, VerifyDraft, MakeDraft} (speculative.cpp).
#pragma once

#include <llama.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lp {

namespace grammar {
class GrammarState;
}

struct DraftParams {
  uint32_t draftMax = 0;  // most tokens in one draft; 0: speculation off
  uint32_t draftMin = 1;  // a shorter draft is not decoded
  uint32_t ngramMin = 2;  // the shortest suffix of the history looked up
  uint32_t ngramMax = 4;  // the longest (tried first)
  bool textLookup = true; // prompt lookup: when no token n-gram matches, match the text (below)
  bool model = false;     // draft with the context's draft model instead of prompt lookup
  float pMin = 0.0f;      // draft model: stop where its greedy token is less likely than this
};

// Whether `draft` can draft for `target`: the same tokenizer type, BOS/EOS, and token texts (the
// vocabularies may differ in size by 128 at most), as llama.cpp's common_speculative_are_compatible;
// else false with the first difference in *why.
bool DraftCompatible(const llama_model* target, const llama_model* draft, std::string* why);

// The draft after `history` + `last`: for n from ngramMax down to ngramMin, the tokens that
// followed the most recent earlier occurrence of the last n tokens, at most maxTokens of them; the
// first n whose draft has at least draftMin tokens wins. Empty when none does.
void NgramDraft(const std::vector<llama_token>& history, llama_token last, const DraftParams& params, size_t maxTokens,
                std::vector<llama_token>* out);

// The history as text, for a lookup that token n-grams miss: the same text tokenized another way
// (the prompt holds a file tokenized in one piece, the model writes it in others), and the same
// text JSON-escaped (a file shown raw in the prompt, copied into a tool call's string argument,
// where every newline is `\n` and every quote `\"`: no token n-gram of the file occurs there).
// `raw` is the pieces of the tokens (control tokens render empty), `escaped` the same as the inside
// of a JSON string. Kept in step with the sequence's tokens, rebuilt when they are not a
// continuation of what it saw.
struct TextHistory {
  std::string raw, escaped;
  std::vector<llama_token> tokens;  // the tokens `raw` holds
  void Sync(const llama_vocab* vocab, const std::vector<llama_token>& cached);
  void Push(const llama_vocab* vocab, llama_token token);
};

// The draft after `history` + `last` by text: the most recent earlier occurrence of the text's
// last 16 (then 8) bytes, in the raw text, then in its escaped form; the text that followed it
// there, tokenized, is the draft (cut before its last word unless the text ran out, since a word
// cut short tokenizes otherwise), at most maxTokens tokens. Empty when nothing matches.
void TextDraft(TextHistory* history, const llama_vocab* vocab, llama_token last, size_t maxTokens, std::vector<llama_token>* out);

// How many leading tokens of draft[0..n) the grammar takes one after the other from its current
// state (llama.cpp's own grammar, on a copy of the stacks; the state is left as it was). A grammar
// that waits for its trigger takes everything (the sampler checks each token as it comes).
size_t GrammarPrefix(grammar::GrammarState* grammar, const llama_vocab* vocab, const llama_token* draft, size_t n);

}  // namespace lp
