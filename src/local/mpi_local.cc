#include "local/mpi_local.h"

#include <algorithm>

#include "api/validation.h"
#include "kinds/mpi_v2.h"

namespace trainctl::local {

bool IsIdleReplica(const api::Job& job, const std::string& type) {
  return job.info().has_launcher() && type == "Worker";
}

std::vector<std::string> IdleArgv() { return {"sleep", "infinity"}; }

int LocalMpiSlots(const api::Job& job) {
  int slots = job.slots_per_worker.value_or(1);
  int workers = job.replica_specs.count("Worker") ? job.ReplicasOf("Worker") : 0;
  if (job.IsMpiV2() && kinds::MpiRunsLauncherAsWorker(job)) workers += 1;
  return workers > 0 ? workers * slots : slots;
}

std::string LocalMpiHostfile(const api::Job& job) {
  if (job.IsMpiV2()) return kinds::MpiV2HostfileLine(job, "localhost", LocalMpiSlots(job));
  return "localhost slots=" + std::to_string(LocalMpiSlots(job)) + "\n";
}

std::vector<api::EnvVar> LocalMpiLauncherEnv(const api::Job& job,
                                             std::vector<api::EnvVar> upstream,
                                             const std::string& hostfile_path, bool as_root,
                                             int cores) {
  std::vector<api::EnvVar> out;
  for (api::EnvVar& e : upstream) {
    // How mpirun reaches other hosts (kubexec.sh, ssh's arguments): it reaches none here.
    if (e.name == "OMPI_MCA_plm_rsh_agent" || e.name == "I_MPI_HYDRA_BOOTSTRAP_EXEC" ||
        e.name == "OMPI_MCA_plm_rsh_args" || e.name == "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS" ||
        e.name == "HYDRA_LAUNCH_EXTRA_ARGS")
      continue;
    if (e.name == "OMPI_MCA_orte_default_hostfile" || e.name == "I_MPI_HYDRA_HOST_FILE" ||
        e.name == "HYDRA_HOST_FILE")
      e.value = hostfile_path;
    if (e.name == "I_MPI_HYDRA_BOOTSTRAP") e.value = "fork";
    out.push_back(std::move(e));
  }
  auto add = [&](const std::string& name, const std::string& value) {
    api::EnvVar e;
    e.name = name;
    e.value = value;
    out.push_back(std::move(e));
  };
  add("OMPI_MCA_plm", "isolated");
  if (job.IsMpiV2() && kinds::MpiImplementationOf(job) == kinds::kMpiIntel)
    add("I_MPI_HYDRA_BOOTSTRAP", "fork");
  if (job.IsMpiV2() && kinds::MpiImplementationOf(job) == kinds::kMpiMpich)
    add("HYDRA_LAUNCHER", "fork");
  if (as_root) {
    add("OMPI_ALLOW_RUN_AS_ROOT", "1");
    add("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  }
  if (LocalMpiSlots(job) > std::max(cores, 1)) add("OMPI_MCA_rmaps_base_oversubscribe", "1");
  return out;
}

bool LocalLauncherWaits(const api::Job& job, const std::string& type, int workers_running) {
  if (!job.IsMpiV2() || !job.info().IsLauncher(type)) return false;
  if (job.launcher_creation_policy != kinds::kLauncherWaitForWorkersReady) return false;
  int workers = job.replica_specs.count("Worker") ? job.ReplicasOf("Worker") : 0;
  return workers_running < workers;
}

std::optional<std::string> LocalMpiWorkerNote(const api::Job& job) {
  if (!job.IsMpiV2() || !job.replica_specs.count("Worker") || job.ReplicasOf("Worker") == 0)
    return std::nullopt;
  return api::ReplicaSpecPath(job, "Worker") +
         ": the workers' command (sshd on a cluster) is not run here: the launcher's mpirun "
         "starts every rank on this machine itself, so each worker only holds its place until "
         "the job ends";
}

std::optional<std::string> LocalMpiRootNote(const api::Job& job, bool as_root) {
  if (!as_root) return std::nullopt;
  for (const auto& [type, spec] : job.replica_specs)
    if (job.info().IsLauncher(type) && job.ReplicasOf(type) > 0)
      return api::ReplicaSpecPath(job, type) +
             ": mpirun runs as root here (trainctl run is root), so the launcher gets "
             "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; on a cluster its "
             "pod runs as the image's user";
  return std::nullopt;
}

}  // namespace trainctl::local
