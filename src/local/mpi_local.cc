#include "local/mpi_local.h"

#include <algorithm>

#include "api/validation.h"

namespace trainctl::local {

bool IsIdleReplica(const api::Job& job, const std::string& type) {
  return job.info().has_launcher() && type == "Worker";
}

std::vector<std::string> IdleArgv() { return {"sleep", "infinity"}; }

int LocalMpiSlots(const api::Job& job) {
  int slots = job.slots_per_worker.value_or(1);
  int workers = job.replica_specs.count("Worker") ? job.ReplicasOf("Worker") : 0;
  return workers > 0 ? workers * slots : slots;
}

std::string LocalMpiHostfile(const api::Job& job) {
  return "localhost slots=" + std::to_string(LocalMpiSlots(job)) + "\n";
}

std::vector<api::EnvVar> LocalMpiLauncherEnv(const api::Job& job,
                                             std::vector<api::EnvVar> upstream,
                                             const std::string& hostfile_path, bool as_root,
                                             int cores) {
  std::vector<api::EnvVar> out;
  for (api::EnvVar& e : upstream) {
    if (e.name == "OMPI_MCA_plm_rsh_agent" || e.name == "I_MPI_HYDRA_BOOTSTRAP_EXEC") continue;
    if (e.name == "OMPI_MCA_orte_default_hostfile") e.value = hostfile_path;
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
  if (as_root) {
    add("OMPI_ALLOW_RUN_AS_ROOT", "1");
    add("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  }
  if (LocalMpiSlots(job) > std::max(cores, 1)) add("OMPI_MCA_rmaps_base_oversubscribe", "1");
  return out;
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
