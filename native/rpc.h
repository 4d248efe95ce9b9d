// ggml RPC devices for loadModel({rpcServers}): the remote devices of each rpc-server, then the
// local GPUs, the list llama.cpp builds for `--rpc` (RPC first, to keep network transfers few).
#pragma once

#include <ggml-backend.h>

#include <string>
#include <vector>

#include "common.h"

namespace lp {

// Connects to each endpoint ("host:port") and fills `out` with its devices, followed (when
// `appendLocal`) by the local GPUs llama.cpp would pick, for llama_model_params.devices (the caller
// adds the terminating nullptr). Blocking network I/O: call it off the JS thread. ggml aborts the
// process when an endpoint cannot be reached, so the JS side checks each endpoint first (handshake).
NativeError RpcDevices(const std::vector<std::string>& endpoints, bool appendLocal, std::vector<ggml_backend_dev_t>* out);

}  // namespace lp
