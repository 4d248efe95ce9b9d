#include "rpc.h"

#include <cstring>

namespace lp {

NativeError RpcDevices(const std::vector<std::string>& endpoints, bool appendLocal, std::vector<ggml_backend_dev_t>* out) {
  out->clear();
  // By name, as llama.cpp's common does: works whether ggml's backends are linked in or loaded
  // as modules (GGML_BACKEND_DL).
  ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
  if (rpc == nullptr) {
    return {"ERR_MODEL_LOAD", "this build of llamapeg has no ggml RPC backend (it was built with LLAMAPEG_RPC=0); rebuild it with LLAMAPEG_RPC=1 to use rpcServers"};
  }
  using AddServer = ggml_backend_reg_t (*)(const char*);
  auto add = reinterpret_cast<AddServer>(ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server"));
  if (add == nullptr) return {"ERR_MODEL_LOAD", "ggml's RPC backend lacks ggml_backend_rpc_add_server"};
  for (const std::string& endpoint : endpoints) {
    ggml_backend_reg_t reg = add(endpoint.c_str());
    size_t n = reg == nullptr ? 0 : ggml_backend_reg_dev_count(reg);
    if (n == 0) return {"ERR_MODEL_LOAD", "rpc-server " + endpoint + " offers no devices"};
    for (size_t i = 0; i < n; i++) out->push_back(ggml_backend_reg_dev_get(reg, i));
  }
  if (!appendLocal) return {};
  // Then the local devices llama.cpp would pick by default: discrete GPUs (one per device id),
  // else integrated ones. The CPU is not listed; it takes the layers that are not offloaded.
  std::vector<ggml_backend_dev_t> gpus;
  std::vector<ggml_backend_dev_t> igpus;
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    if (std::strcmp(ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)), "RPC") == 0) continue;
    switch (ggml_backend_dev_type(dev)) {
      case GGML_BACKEND_DEVICE_TYPE_GPU: {
        ggml_backend_dev_props props;
        ggml_backend_dev_get_props(dev, &props);
        bool seen = false;
        for (ggml_backend_dev_t g : gpus) {
          ggml_backend_dev_props other;
          ggml_backend_dev_get_props(g, &other);
          if (props.device_id != nullptr && other.device_id != nullptr && std::strcmp(props.device_id, other.device_id) == 0) seen = true;
        }
        if (!seen) gpus.push_back(dev);
        break;
      }
      case GGML_BACKEND_DEVICE_TYPE_IGPU:
        if (igpus.empty() || ggml_backend_dev_backend_reg(dev) == ggml_backend_dev_backend_reg(igpus.back())) igpus.push_back(dev);
        break;
      default:
        break;
    }
  }
  const std::vector<ggml_backend_dev_t>& local = gpus.empty() ? igpus : gpus;
  out->insert(out->end(), local.begin(), local.end());
  return {};
}

}  // namespace lp
