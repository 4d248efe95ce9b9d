// Compute backends loaded at run time (ggml's GGML_BACKEND_DL modules) and what they found.
// lib/native/load.ts decides which module files to load; this file only does what it is told:
//   backendScore(path)  how well this CPU runs a CPU-variant module (0: it cannot)
//   backendLoad(path)   loads a backend module once per process: {name, devices}
//   devices()           every device of every loaded backend, with its memory
//   dynamicBackends     false when ggml's backends are linked in (nothing to load)
#pragma once

#include <napi.h>

namespace lp {

// Process-wide setup that llama_backend_init() does, minus ggml_backend_load_all(): that one
// searches the executable's folder and the working directory, and we choose the files ourselves.
void InitBackendRegistry();

// Adds backendScore, backendLoad and devices to the module's exports.
void RegisterSystem(Napi::Env env, Napi::Object exports);

}  // namespace lp
