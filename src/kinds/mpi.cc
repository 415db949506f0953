// MPIJob (legacy kubeflow.org/v1): a Launcher whose mpirun starts the ranks on the Workers.
#include "api/kind_plugin.h"
#include "kinds/common.h"

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
                    .injects_default_port = false,
                    .uses_selector = false,
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Launcher"}}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void MpiKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  job->slots_per_worker = spec.Integer<int32_t>("slotsPerWorker");
  job->main_container = spec.String("mainContainer").value_or("");
  job->mpi_clean_pod_policy = spec.String("cleanPodPolicy");
}

void MpiKind::EncodeSpec(const api::Job& job, nlohmann::json* spec) const {
  if (job.mpi_clean_pod_policy) (*spec)["cleanPodPolicy"] = *job.mpi_clean_pod_policy;
}

void MpiKind::Default(api::Job* job) const {
  api::RunPolicy& rp = job->run_policy;
  if (!rp.clean_pod_policy && !job->mpi_clean_pod_policy) {
    rp.clean_pod_policy = "None";
    job->mpi_clean_pod_policy = "None";
  }
  // Reconcile keeps the two fields in step; the runPolicy value wins when set.
  if (rp.clean_pod_policy) job->mpi_clean_pod_policy = rp.clean_pod_policy;
  else rp.clean_pod_policy = job->mpi_clean_pod_policy;
  for (auto& [type, spec] : job->replica_specs)
    if (!spec.replicas && type == "Worker") spec.replicas = 0;
}

// MPIJob has no webhook upstream; the controller checks these (§2.5). trainctl reports them
// with field paths like the other kinds.
void MpiKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  api::FieldErrorList* errors = &out->errors;
  ValidateTypeNames(job, info().replica_types, errors);
  if (!job.HasType("Launcher"))
    errors->push_back(api::Required(api::ReplicaSpecPath(job, "Launcher"), "must be present"));
  for (const auto& [type, spec] : job.replica_specs) {
    std::string base = api::ReplicaSpecPath(job, type) + ".template.spec.containers";
    const nlohmann::json* containers = api::Containers(spec.pod_template);
    if (!containers || containers->empty()) {
      errors->push_back(api::Required(base, "containers definition expected in " + type));
      continue;
    }
    for (size_t i = 0; i < containers->size(); ++i) {
      const nlohmann::json& c = (*containers)[i];
      if (!c.is_object()) continue;
      if (c.value("image", "").empty())
        errors->push_back(api::Required(base + "[" + std::to_string(i) + "].image",
                                        "image is undefined in the container of " + type));
      if (c.value("name", "").empty())
        errors->push_back(api::Required(base + "[" + std::to_string(i) + "].name",
                                        "name is undefined in the container of " + type));
    }
    if (type == "Launcher" && spec.replicas && *spec.replicas != 1)
      errors->push_back(api::Forbidden(api::ReplicaSpecPath(job, type) + ".replicas",
                                       "there must be only 1 launcher replica"));
  }
}

}  // namespace

const api::KindPlugin& MpiPlugin() {
  static const MpiKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
