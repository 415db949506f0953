// MXJob (kind removed upstream in v1.9, served here for old manifests): MXNet's
// parameter-server roles (Scheduler, Servers, Workers) and the tuner roles.
#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

class MxnetKind final : public api::KindPlugin {
 public:
  MxnetKind()
      : KindPlugin({.kind = api::Kind::kMXJob,
                    .name = "MXJob",
                    .plural = "mxjobs",
                    .spec_map_field = "mxReplicaSpecs",
                    .replica_types = {"Scheduler", "Server", "Worker", "TunerTracker",
                                      "TunerServer", "Tuner"},
                    .default_container = "mxnet",
                    .port_name = "mxjob-port",
                    .default_port = 9091,
                    .default_restart_policy = "Never",
                    .framework_label = "mxnet",
                    .controller_name = "mxjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .uses_selector = false,
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Scheduler", "Worker"},
                                     .failed_prefix = "mxjob"}}) {}

  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void MxnetKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  ValidateReplicaTemplates(job, &out->errors);
  ValidateTypeNames(job, info().replica_types, &out->errors);
}

}  // namespace

const api::KindPlugin& MxnetPlugin() {
  static const MxnetKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
