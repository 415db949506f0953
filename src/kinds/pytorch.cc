// PyTorchJob: Master and Workers wired for torch.distributed and torchrun (incl. elastic
// training with an HPA).
#include "api/kind_plugin.h"

namespace trainctl::kinds {
namespace {

class PyTorchKind final : public api::KindPlugin {
 public:
  PyTorchKind()
      : KindPlugin({.kind = api::Kind::kPyTorchJob,
                    .name = "PyTorchJob",
                    .plural = "pytorchjobs",
                    .spec_map_field = "pytorchReplicaSpecs",
                    .replica_types = {"Master", "Worker"},
                    .default_container = "pytorch",
                    .port_name = "pytorchjob-port",
                    .default_port = 23456,
                    .default_restart_policy = "OnFailure",
                    .framework_label = "pytorch",
                    .controller_name = "pytorchjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true}) {}
};

}  // namespace

const api::KindPlugin& PyTorchPlugin() {
  static const PyTorchKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
