// JAXJob: Workers wired for jax.distributed (Worker 0 is the coordinator).
#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

class JaxKind final : public api::KindPlugin {
 public:
  JaxKind()
      : KindPlugin({.kind = api::Kind::kJAXJob,
                    .name = "JAXJob",
                    .plural = "jaxjobs",
                    .spec_map_field = "jaxReplicaSpecs",
                    .replica_types = {"Worker"},
                    .default_container = "jax",
                    .port_name = "jaxjob-port",
                    .default_port = 6666,
                    .default_restart_policy = "Never",
                    .framework_label = "jax",
                    .controller_name = "jaxjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .uses_selector = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kMasterOrWorkers,
                                     .master_decides = false}}) {}

  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void JaxKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  ValidateReplicaTemplates(job, &out->errors);
  ValidateTypeNames(job, info().replica_types, &out->errors);
}

}  // namespace

const api::KindPlugin& JaxPlugin() {
  static const JaxKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
