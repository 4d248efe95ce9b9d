// The grammar a generation follows: parameters as the JS side passes them. The engine itself lives
// in native/grammar/ (GrammarState: llama.cpp's grammar semantics, our mask engine and triggers).
#pragma once

#include "grammar/grammar-state.h"
#include "grammar/spec.h"

namespace lp {

using GrammarParams = grammar::GrammarSpec;

}  // namespace lp
