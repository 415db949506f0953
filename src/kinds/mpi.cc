// MPIJob (legacy kubeflow.org/v1): a Launcher whose mpirun starts the ranks on the Workers.
#include "api/kind_plugin.h"

namespace trainctl::kinds {
namespace {

class MpiKind final : public api::KindPlugin {
 public:
  MpiKind()
      : KindPlugin({.kind = api::Kind::kMPIJob,
                    .name = "MPIJob",
                    .plural = "mpijobs",
                    .spec_map_field = "mpiReplicaSpecs",
                    .replica_types = {"Launcher", "Worker"},
                    .default_container = "mpi",
                    .port_name = "mpi-port",
                    .default_port = 9999,
                    .default_restart_policy = "Never",
                    .framework_label = "mpi",
                    .controller_name = "mpijob-controller",
                    .normalizes_type_case = false,
                    .injects_default_port = false}) {}
};

}  // namespace

const api::KindPlugin& MpiPlugin() {
  static const MpiKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
