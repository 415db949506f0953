#include "kinds/mpi_v2.h"

#include "api/json_fields.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

constexpr const char* kLauncher = "Launcher";
constexpr const char* kWorker = "Worker";

// The restart policy mpi-operator's defaults give a replica of `type`.
std::string DefaultRestart(const std::string& type) {
  return type == kLauncher ? "OnFailure" : "Never";
}

void ValidateReplica(const api::Job& job, const std::string& type, const api::ReplicaSpec& spec,
                     api::FieldErrorList* errors) {
  std::string path = api::ReplicaSpecPath(job, type);
  std::string restart = spec.restart_policy.empty() ? DefaultRestart(type) : spec.restart_policy;
  if (restart != "Never" && restart != "OnFailure")
    errors->push_back(api::NotSupported(path + ".restartPolicy", restart, {"Never", "OnFailure"}));
  const nlohmann::json* containers = api::Containers(spec.pod_template);
  if (!containers || containers->empty())
    errors->push_back(
        api::Required(path + ".template.spec.containers", "must define at least one container"));
  if (type == kLauncher && spec.replicas.value_or(1) != 1)
    errors->push_back(api::Invalid(path + ".replicas", *spec.replicas, "must be 1"));
  if (type == kWorker && spec.replicas.value_or(0) <= 0)
    errors->push_back(api::Invalid(path + ".replicas", spec.replicas.value_or(0),
                                   "must be greater than or equal to 1"));
}

}  // namespace

void DecodeMpiV2Spec(api::FieldReader& spec, api::Job* job) {
  job->slots_per_worker = spec.Integer<int32_t>("slotsPerWorker");
  job->run_launcher_as_worker = spec.Bool("runLauncherAsWorker");
  job->ssh_auth_mount_path = spec.String("sshAuthMountPath").value_or("");
  job->launcher_creation_policy = spec.String("launcherCreationPolicy").value_or("");
  job->mpi_implementation = spec.String("mpiImplementation").value_or("");
}

void EncodeMpiV2Spec(const api::Job& job, nlohmann::json* spec) {
  if (job.slots_per_worker) (*spec)["slotsPerWorker"] = *job.slots_per_worker;
  if (job.run_launcher_as_worker) (*spec)["runLauncherAsWorker"] = *job.run_launcher_as_worker;
  if (!job.ssh_auth_mount_path.empty()) (*spec)["sshAuthMountPath"] = job.ssh_auth_mount_path;
  if (!job.launcher_creation_policy.empty())
    (*spec)["launcherCreationPolicy"] = job.launcher_creation_policy;
  if (!job.mpi_implementation.empty()) (*spec)["mpiImplementation"] = job.mpi_implementation;
}

void DefaultMpiV2(api::Job* job) {
  if (!job->run_policy.clean_pod_policy) job->run_policy.clean_pod_policy = "None";
  // The launcher is a batch Job, whose backoffLimit is 6 unless runPolicy gives one: its
  // OnFailure restarts end there (mpi-operator leaves the field to the Job's own default).
  if (!job->run_policy.backoff_limit) job->run_policy.backoff_limit = 6;
  if (!job->slots_per_worker) job->slots_per_worker = 1;
  if (job->ssh_auth_mount_path.empty()) job->ssh_auth_mount_path = "/root/.ssh";
  if (job->mpi_implementation.empty()) job->mpi_implementation = kMpiOpenMpi;
  if (job->launcher_creation_policy.empty()) job->launcher_creation_policy = kLauncherAtStartup;
  // WaitForWorkersReady: the launcher's group waits until every worker runs (engine/groups.h).
  if (job->launcher_creation_policy == kLauncherWaitForWorkersReady) {
    auto launcher = job->replica_specs.find(kLauncher);
    if (launcher != job->replica_specs.end() && launcher->second.depends_on.empty())
      launcher->second.depends_on.push_back({kWorker, api::GroupDependency::Until::kReady,
                                             "launcherCreationPolicy WaitForWorkersReady"});
  }
  for (auto& [type, spec] : job->replica_specs) {
    if (spec.restart_policy.empty()) spec.restart_policy = DefaultRestart(type);
    if (!spec.replicas) spec.replicas = type == kLauncher ? 1 : 0;
  }
}

void ValidateMpiV2(const api::Job& job, api::ValidationResult* out) {
  api::FieldErrorList* errors = &out->errors;
  ValidateTypeNames(job, {kLauncher, kWorker}, errors);
  if (!job.HasType(kLauncher))
    errors->push_back(
        api::Required(api::ReplicaSpecPath(job, kLauncher), "must have Launcher replica spec"));
  for (const auto& [type, spec] : job.replica_specs) ValidateReplica(job, type, spec, errors);
  if (job.slots_per_worker && *job.slots_per_worker < 0)
    errors->push_back(api::Invalid("spec.slotsPerWorker", *job.slots_per_worker,
                                   "must be greater than or equal to 0"));
  const std::string& impl = job.mpi_implementation;
  if (!impl.empty() && impl != kMpiOpenMpi && impl != kMpiIntel && impl != kMpiMpich)
    errors->push_back(
        api::NotSupported("spec.mpiImplementation", impl, {kMpiIntel, kMpiMpich, kMpiOpenMpi}));
  const std::string& policy = job.launcher_creation_policy;
  if (!policy.empty() && policy != kLauncherAtStartup && policy != kLauncherWaitForWorkersReady)
    errors->push_back(api::NotSupported("spec.launcherCreationPolicy", policy,
                                        {kLauncherAtStartup, kLauncherWaitForWorkersReady}));
  // The last worker's host name is a pod name and a DNS label: at most 63 characters.
  auto worker = job.replica_specs.find(kWorker);
  int32_t workers = worker == job.replica_specs.end() ? 1 : worker->second.replicas.value_or(1);
  std::string last = job.name + "-worker-" + std::to_string(workers > 0 ? workers - 1 : 0);
  if (!job.name.empty() && job.name.size() <= 63 && last.size() > 63)
    errors->push_back(
        api::Invalid("metadata.name", job.name,
                     "will not able to create pod and service with invalid DNS label \"" + last +
                         "\": must be no more than 63 characters"));
}

bool MpiRunsLauncherAsWorker(const api::Job& job) {
  return job.run_launcher_as_worker.value_or(false);
}

std::string MpiImplementationOf(const api::Job& job) {
  return job.mpi_implementation.empty() ? kMpiOpenMpi : job.mpi_implementation;
}

std::string MpiV2HostfileLine(const api::Job& job, const std::string& host, int slots) {
  if (MpiImplementationOf(job) == kMpiOpenMpi)
    return host + " slots=" + std::to_string(slots) + "\n";
  return host + ":" + std::to_string(slots) + "\n";
}

std::vector<api::EnvVar> MpiV2LauncherEnv(const api::Job& job, const std::string& config_dir) {
  std::vector<api::EnvVar> env = {Env("K_MPI_JOB_ROLE", "launcher")};
  std::string hostfile = config_dir + "/hostfile";
  std::string slots = std::to_string(job.slots_per_worker.value_or(1));
  std::string impl = MpiImplementationOf(job);
  if (impl == kMpiOpenMpi) {
    env.push_back(Env("OMPI_MCA_orte_keep_fqdn_hostnames", "true"));
    env.push_back(Env("OMPI_MCA_orte_default_hostfile", hostfile));
    env.push_back(Env("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"));
    env.push_back(Env("OMPI_MCA_orte_set_default_slots", slots));
  } else if (impl == kMpiIntel) {
    env.push_back(Env("I_MPI_HYDRA_HOST_FILE", hostfile));
    env.push_back(Env("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"));
    env.push_back(Env("I_MPI_PERHOST", slots));
  } else if (impl == kMpiMpich) {
    env.push_back(Env("HYDRA_HOST_FILE", hostfile));
    env.push_back(Env("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"));
  }
  if (!MpiRunsLauncherAsWorker(job)) {
    env.push_back(Env("NVIDIA_VISIBLE_DEVICES", ""));
    env.push_back(Env("NVIDIA_DRIVER_CAPABILITIES", ""));
  }
  return env;
}

std::vector<api::EnvVar> MpiV2WorkerEnv() { return {Env("K_MPI_JOB_ROLE", "worker")}; }

}  // namespace trainctl::kinds
