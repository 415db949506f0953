// MPIJob (legacy kubeflow.org/v1) wiring: the launcher's hostfile, discover_hosts.sh and
// OMPI_MCA_*/I_MPI_* env. Workers get no env.
#include <algorithm>

#include "frameworks/plugins.h"

namespace trainctl::frameworks {
namespace {

int Slots(const api::Job& job) { return job.slots_per_worker.value_or(1); }

bool UserSetEnv(const api::Job& job, const std::string& name) {
  auto launcher = job.replica_specs.find("Launcher");
  if (launcher == job.replica_specs.end()) return false;
  const nlohmann::json* containers = api::Containers(launcher->second.pod_template);
  if (!containers || containers->empty() || !(*containers)[0].contains("env")) return false;
  for (const nlohmann::json& e : (*containers)[0]["env"])
    if (e.is_object() && e.value("name", "") == name) return true;
  return false;
}

}  // namespace

bool MpiFramework::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Launcher";
}

StatusOr<ReplicaEnv> MpiFramework::EnvFor(const api::Job& job, const std::string& type, int index,
                                          const Endpoints& endpoints) const {
  ReplicaEnv out;
  if (type == "Launcher") {
    out.env = MpiLauncherEnv(job, "/etc/mpi", false);
    out.default_container_only = true;
  }
  return out;
}

std::string MpiHostfile(const api::Job& job, const Endpoints& endpoints, bool gpu_launcher) {
  std::string slots = " slots=" + std::to_string(Slots(job));
  std::string out;
  if (gpu_launcher) out += job.name + "-launcher" + slots + "\n";
  for (int i = 0; i < job.ReplicasOf("Worker"); ++i) out += endpoints.Host("Worker", i) + slots + "\n";
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

std::vector<EnvVar> MpiLauncherEnv(const api::Job& job, const std::string& config_dir,
                                   bool gpu_launcher) {
  std::vector<EnvVar> env;
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

}  // namespace trainctl::frameworks
