// JAXJob: Workers wired for jax.distributed (Worker 0 is the coordinator): COORDINATOR_*,
// NUM_PROCESSES and PROCESS_ID.
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
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
};

void JaxKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  ValidateReplicaTemplates(job, &out->errors);
  ValidateTypeNames(job, info().replica_types, &out->errors);
}

bool JaxKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return index == 0;
}

StatusOr<api::ReplicaEnv> JaxKind::EnvFor(const api::Job& job, const std::string& type, int index,
                                          const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  StatusOr<int> declared = api::DeclaredPort(job, "Worker");
  if (!declared.ok())
    return FailedPreconditionError("default container port is not exposed: " +
                                   declared.status().message());
  out.env.push_back(Env("PYTHONUNBUFFERED", "1"));
  out.env.push_back(
      Env("COORDINATOR_PORT", std::to_string(endpoints.Port("Worker", 0, *declared))));
  out.env.push_back(Env("COORDINATOR_ADDRESS", endpoints.Host("Worker", 0)));
  out.env.push_back(Env("NUM_PROCESSES", std::to_string(job.TotalReplicas())));
  out.env.push_back(Env("PROCESS_ID", std::to_string(index)));
  return out;
}

}  // namespace

const api::KindPlugin& JaxPlugin() {
  static const JaxKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
