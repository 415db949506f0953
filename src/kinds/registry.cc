// The registry of job kinds, in api::Kind order. A new kind is its enum value (api/kinds.h), its
// file src/kinds/<kind>.cc (listed in src/CMakeLists.txt), its two lines here (the declaration
// and the entry) and its CRD (docs/architecture.md).
#include "api/kind_plugin.h"

namespace trainctl::kinds {

const api::KindPlugin& PyTorchPlugin();
const api::KindPlugin& TensorFlowPlugin();
const api::KindPlugin& XGBoostPlugin();
const api::KindPlugin& MpiPlugin();
const api::KindPlugin& PaddlePlugin();
const api::KindPlugin& JaxPlugin();
const api::KindPlugin& MxnetPlugin();
const api::KindPlugin& TrainJobPlugin();

}  // namespace trainctl::kinds

namespace trainctl::api {

const std::vector<const KindPlugin*>& AllPlugins() {
  static const std::vector<const KindPlugin*> kPlugins = {
      &kinds::PyTorchPlugin(), &kinds::TensorFlowPlugin(), &kinds::XGBoostPlugin(),
      &kinds::MpiPlugin(),     &kinds::PaddlePlugin(),     &kinds::JaxPlugin(),
      &kinds::MxnetPlugin(),   &kinds::TrainJobPlugin(),
  };
  return kPlugins;
}

const KindPlugin& PluginFor(Kind kind) {
  static const std::vector<const KindPlugin*> kByKind = [] {
    std::vector<const KindPlugin*> out(AllPlugins().size(), nullptr);
    for (const KindPlugin* p : AllPlugins()) out.at(static_cast<size_t>(p->info().kind)) = p;
    return out;
  }();
  return *kByKind.at(static_cast<size_t>(kind));
}

}  // namespace trainctl::api
