// MPIJob (legacy kubeflow.org/v1): a Launcher whose mpirun starts the ranks on the Workers,
// wired through the launcher's hostfile, discover_hosts.sh and OMPI_MCA_*/I_MPI_* env. Workers
// get no env. A job of kubeflow.org/v2beta1 (mpi-operator's API) has its fields, defaults,
// checks and env from kinds/mpi_v2.cc.
#include "kinds/mpi.h"

#include <algorithm>

#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "kinds/common.h"
#include "kinds/mpi_v2.h"

namespace trainctl::kinds {
namespace {

int Slots(const api::Job& job) { return job.slots_per_worker.value_or(1); }

bool UserSetEnv(const api::Job& job, const std::string& name) {
  auto launcher = job.replica_specs.find("Launcher");
  if (launcher == job.replica_specs.end()) return false;
  const nlohmann::json* containers = api::Containers(launcher->second.pod_template);
  if (!containers || containers->empty() || !(*containers)[0].contains("env")) return false;
  for (const nlohmann::json& e : (*containers)[0]["env"])
    if (e.is_object() && api::StringAt(e, "name") == name) return true;
  return false;
}

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
                    .launcher_type = "Launcher",
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Launcher"}},
                    .api_versions = {api::kApiVersion, api::kApiVersionMpiV2}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
};

void MpiKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  if (job->IsMpiV2()) return DecodeMpiV2Spec(spec, job);
  job->slots_per_worker = spec.Integer<int32_t>("slotsPerWorker");
  job->main_container = spec.String("mainContainer").value_or("");
  job->mpi_clean_pod_policy = spec.String("cleanPodPolicy");
}

void MpiKind::EncodeSpec(const api::Job& job, nlohmann::json* spec) const {
  if (job.IsMpiV2()) return EncodeMpiV2Spec(job, spec);
  if (job.mpi_clean_pod_policy) (*spec)["cleanPodPolicy"] = *job.mpi_clean_pod_policy;
}

void MpiKind::Default(api::Job* job) const {
  if (job->IsMpiV2()) return DefaultMpiV2(job);
  api::RunPolicy& rp = job->run_policy;
  if (!rp.clean_pod_policy && !job->mpi_clean_pod_policy) {
    rp.clean_pod_policy = "None";
    job->mpi_clean_pod_policy = "None";
  }
  // Reconcile keeps the two fields in step; the runPolicy value wins when set.
  if (rp.clean_pod_policy)
    job->mpi_clean_pod_policy = rp.clean_pod_policy;
  else
    rp.clean_pod_policy = job->mpi_clean_pod_policy;
  for (auto& [type, spec] : job->replica_specs)
    if (!spec.replicas && type == "Worker") spec.replicas = 0;
}

// MPIJob has no webhook upstream; the controller checks these (§2.5). trainctl reports them
// with field paths like the other kinds.
void MpiKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  if (job.IsMpiV2()) return ValidateMpiV2(job, out);
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
      if (api::StringAt(c, "image").empty())
        errors->push_back(api::Required(base + "[" + std::to_string(i) + "].image",
                                        "image is undefined in the container of " + type));
      if (api::StringAt(c, "name").empty())
        errors->push_back(api::Required(base + "[" + std::to_string(i) + "].name",
                                        "name is undefined in the container of " + type));
    }
    if (type == "Launcher" && spec.replicas && *spec.replicas != 1)
      errors->push_back(api::Forbidden(api::ReplicaSpecPath(job, type) + ".replicas",
                                       "there must be only 1 launcher replica"));
  }
}

bool MpiKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Launcher";
}

StatusOr<api::ReplicaEnv> MpiKind::EnvFor(const api::Job& job, const std::string& type, int index,
                                          const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  if (job.IsMpiV2()) {
    out.env = type == "Launcher" ? MpiV2LauncherEnv(job, "/etc/mpi") : MpiV2WorkerEnv();
    out.first_container_only = true;
    return out;
  }
  if (type == "Launcher") {
    out.env = MpiLauncherEnv(job, "/etc/mpi", false);
    out.first_container_only = true;
  }
  return out;
}

}  // namespace

const api::KindPlugin& MpiPlugin() {
  static const MpiKind kPlugin;
  return kPlugin;
}

std::string MpiHostfile(const api::Job& job, const api::Endpoints& endpoints, bool gpu_launcher) {
  std::string slots = " slots=" + std::to_string(Slots(job));
  std::string out;
  if (gpu_launcher) out += job.name + "-launcher" + slots + "\n";
  for (int i = 0; i < job.ReplicasOf("Worker"); ++i)
    out += endpoints.Host("Worker", i) + slots + "\n";
  return out;
}

std::string MpiDiscoverHosts(const api::Job& job, const std::vector<std::string>& running_workers,
                             bool gpu_launcher) {
  std::vector<std::string> sorted = running_workers;
  std::sort(sorted.begin(), sorted.end());
  std::string slots = std::to_string(Slots(job));
  std::string out = "#!/bin/sh\n";
  if (gpu_launcher) out += "echo " + job.name + "-launcher:" + slots + "\n";
  for (const std::string& w : sorted) out += "echo " + w + ":" + slots + "\n";
  return out;
}

std::vector<api::EnvVar> MpiLauncherEnv(const api::Job& job, const std::string& config_dir,
                                        bool gpu_launcher) {
  std::vector<api::EnvVar> env;
  env.push_back(Env("OMPI_MCA_plm_rsh_agent", config_dir + "/kubexec.sh"));
  env.push_back(Env("OMPI_MCA_orte_default_hostfile", config_dir + "/hostfile"));
  if (!gpu_launcher) {
    env.push_back(Env("NVIDIA_VISIBLE_DEVICES", ""));
    env.push_back(Env("NVIDIA_DRIVER_CAPABILITIES", ""));
  }
  if (!UserSetEnv(job, "I_MPI_HYDRA_BOOTSTRAP")) env.push_back(Env("I_MPI_HYDRA_BOOTSTRAP", "rsh"));
  if (!UserSetEnv(job, "I_MPI_HYDRA_BOOTSTRAP_EXEC"))
    env.push_back(Env("I_MPI_HYDRA_BOOTSTRAP_EXEC", config_dir + "/kubexec.sh"));
  return env;
}

}  // namespace trainctl::kinds
