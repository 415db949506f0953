// TFJob: Chief/Master, PS, Workers and Evaluator wired through TF_CONFIG.
#include "api/kind_plugin.h"

namespace trainctl::kinds {
namespace {

class TensorFlowKind final : public api::KindPlugin {
 public:
  TensorFlowKind()
      : KindPlugin({.kind = api::Kind::kTFJob,
                    .name = "TFJob",
                    .plural = "tfjobs",
                    .spec_map_field = "tfReplicaSpecs",
                    .replica_types = {"PS", "Worker", "Chief", "Master", "Evaluator"},
                    .default_container = "tensorflow",
                    .port_name = "tfjob-port",
                    .default_port = 2222,
                    .default_restart_policy = "Never",
                    .framework_label = "tensorflow",
                    .controller_name = "tfjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true}) {}
};

}  // namespace

const api::KindPlugin& TensorFlowPlugin() {
  static const TensorFlowKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
