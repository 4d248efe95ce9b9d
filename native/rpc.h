// ggml RPC devices for loadModel({rpcServers}): the remote devices of each rpc-server, then the
// local GPUs, the list llama.cpp builds for `--rpc` (RPC first, to keep network transfers few).
#pragma once

#include <ggml-backend.h>

#include <string>
#include <vector>

#include "common.h"

namespace lp {

// Connects to each endpoint ("host:port") and fills `out` with a null-terminated device list for
// llama_model_params.devices. Blocking network I/O: call it off the JS thread. ggml aborts the
// process when an endpoint cannot be reached, so the JS side checks each endpoint first (handshake).
NativeError RpcDevices(const std::vector<std::string>& endpoints, std::vector<ggml_backend_dev_t>* out);

}  // namespace lp
