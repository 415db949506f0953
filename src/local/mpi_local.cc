#include "local/mpi_local.h"

#include <algorithm>

#include "api/validation.h"
#include "kinds/mpi_v2.h"

namespace trainctl::local {
namespace {

// The launcher's variables that name its hostfile, one per implementation.
bool NamesHostfile(const std::string& name) {
  return name == "OMPI_MCA_orte_default_hostfile" || name == "I_MPI_HYDRA_HOST_FILE" ||
         name == "HYDRA_HOST_FILE";
}

// Whether a container with this command and args runs sshd itself, or runs mpi-operator's
// default command (neither given).
bool RunsSshd(const std::vector<std::string>& command, const std::vector<std::string>& args) {
  if (command.empty()) return args.empty();
  const std::string& program = command.front();
  return program == "sshd" ||
         (program.size() >= 5 && program.compare(program.size() - 5, 5, "/sshd") == 0);
}

// The strings of `container[key]` (non-strings skipped).
std::vector<std::string> StringsOf(const nlohmann::json& container, const char* key) {
  std::vector<std::string> out;
  if (container.is_object() && container.contains(key) && container[key].is_array())
    for (const nlohmann::json& v : container[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

// The number of MPI worker hosts (0 when the job has none).
int WorkerCount(const api::Job& job) {
  const std::string group = job.MpiWorkerGroup();
  return !group.empty() && job.HasType(group) ? job.ReplicasOf(group) : 0;
}

}  // namespace

LocalMpiMode LocalMpiModeOf(const api::Job& job, bool containers) {
  if (job.MpiLauncherGroup().empty()) return LocalMpiMode::kNone;
  return job.UsesMpiV2Mechanics() && containers && WorkerCount(job) > 0 ? LocalMpiMode::kSsh
                                                                        : LocalMpiMode::kFork;
}

bool ServesLauncherOnly(const api::Job& job, const std::string& type) {
  return !job.MpiWorkerGroup().empty() && type == job.MpiWorkerGroup();
}

bool IsIdleReplica(const api::Job& job, const std::string& type, bool containers) {
  return ServesLauncherOnly(job, type) && LocalMpiModeOf(job, containers) == LocalMpiMode::kFork;
}

std::vector<std::string> IdleArgv() { return {"sleep", "infinity"}; }

int LocalMpiSlots(const api::Job& job) {
  int slots = job.slots_per_worker.value_or(1);
  int workers = WorkerCount(job);
  if (job.UsesMpiV2Mechanics() && kinds::MpiRunsLauncherAsWorker(job)) workers += 1;
  return workers > 0 ? workers * slots : slots;
}

std::string LocalMpiWorkerHost(const api::Job& job, int index) {
  if (job.IsMpiTrainJob())
    return job.name + "-" + job.MpiWorkerGroup() + "-0-" + std::to_string(index) + "." + job.name;
  return job.name + "-worker-" + std::to_string(index) + "." + job.name + "." + job.namespace_ +
         ".svc";
}

std::string LocalMpiHostfile(const api::Job& job, LocalMpiMode mode) {
  if (mode == LocalMpiMode::kSsh) {
    int slots = job.slots_per_worker.value_or(1);
    std::string out;
    if (kinds::MpiRunsLauncherAsWorker(job))
      out += kinds::MpiV2HostfileLine(job, "localhost", slots);
    for (int i = 0; i < WorkerCount(job); ++i)
      out += kinds::MpiV2HostfileLine(job, LocalMpiWorkerHost(job, i), slots);
    return out;
  }
  if (job.UsesMpiV2Mechanics())
    return kinds::MpiV2HostfileLine(job, "localhost", LocalMpiSlots(job));
  return "localhost slots=" + std::to_string(LocalMpiSlots(job)) + "\n";
}

std::vector<api::EnvVar> LocalMpiLauncherEnv(const api::Job& job, std::vector<api::EnvVar> upstream,
                                             const std::string& hostfile_path, bool as_root,
                                             int cores, LocalMpiMode mode) {
  std::vector<api::EnvVar> out;
  if (mode == LocalMpiMode::kSsh) {
    for (api::EnvVar& e : upstream) {
      if (NamesHostfile(e.name)) e.value = hostfile_path;
      out.push_back(std::move(e));
    }
    return out;
  }
  for (api::EnvVar& e : upstream) {
    // How mpirun reaches other hosts (kubexec.sh, ssh's arguments): it reaches none here.
    if (e.name == "OMPI_MCA_plm_rsh_agent" || e.name == "I_MPI_HYDRA_BOOTSTRAP_EXEC" ||
        e.name == "OMPI_MCA_plm_rsh_args" || e.name == "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS" ||
        e.name == "HYDRA_LAUNCH_EXTRA_ARGS")
      continue;
    if (NamesHostfile(e.name)) e.value = hostfile_path;
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
  if (job.UsesMpiV2Mechanics() && kinds::MpiImplementationOf(job) == kinds::kMpiIntel)
    add("I_MPI_HYDRA_BOOTSTRAP", "fork");
  if (job.UsesMpiV2Mechanics() && kinds::MpiImplementationOf(job) == kinds::kMpiMpich)
    add("HYDRA_LAUNCHER", "fork");
  if (as_root) {
    add("OMPI_ALLOW_RUN_AS_ROOT", "1");
    add("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  }
  if (LocalMpiSlots(job) > std::max(cores, 1)) add("OMPI_MCA_rmaps_base_oversubscribe", "1");
  return out;
}

std::string LocalSshConfig(const api::Job& job, const std::vector<int>& worker_ports) {
  std::string out = "# trainctl run: the workers of " + job.name +
                    " share this machine's network, each with its sshd on a port of its own\n";
  for (size_t i = 0; i < worker_ports.size(); ++i) {
    std::string host = LocalMpiWorkerHost(job, static_cast<int>(i));
    out += "Host " + host + " " + host.substr(0, host.find('.')) +
           "\n  HostName 127.0.0.1\n  Port " + std::to_string(worker_ports[i]) + "\n";
  }
  out += "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n";
  return out;
}

bool SetLocalSshdPort(int port, std::vector<std::string>* command, std::vector<std::string>* args) {
  if (!RunsSshd(*command, *args)) return false;
  if (command->empty()) {
    *command = {"/usr/sbin/sshd", "-De", "-p", std::to_string(port)};
    return true;
  }
  args->push_back("-p");
  args->push_back(std::to_string(port));
  return true;
}

std::optional<std::string> LocalMpiWorkerNote(const api::Job& job, LocalMpiMode mode) {
  if (!job.UsesMpiV2Mechanics() || WorkerCount(job) == 0) return std::nullopt;
  const std::string workers = job.MpiWorkerGroup();
  if (mode == LocalMpiMode::kSsh) {
    std::string note = api::ReplicaSpecPath(job, workers) +
                       ": the workers run sshd as on a cluster, each on a port of its own "
                       "(this machine's network is shared): `-p <port>` is added to an sshd "
                       "command, and the launcher's ssh finds each worker through the config "
                       "file beside the keys at " +
                       job.ssh_auth_mount_path;
    api::ContainerAt worker = api::DefaultContainerAt(job, workers);
    std::vector<std::string> command, args;
    if (worker.container) {
      command = StringsOf(*worker.container, "command");
      args = StringsOf(*worker.container, "args");
    }
    if (!RunsSshd(command, args))
      note += "; warning: " + worker.path +
              ".command is not sshd, so it must listen on the port in $" + kLocalSshPortEnv +
              " itself or the launcher will not reach it";
    return note;
  }
  return api::ReplicaSpecPath(job, workers) +
         ": the workers' command (sshd on a cluster) is not run here: the launcher's mpirun "
         "starts every rank on this machine itself, so each worker only holds its place until "
         "the job ends";
}

std::optional<std::string> LocalMpiRootNote(const api::Job& job, bool as_root, LocalMpiMode mode) {
  if (!as_root || mode == LocalMpiMode::kSsh) return std::nullopt;
  for (const auto& [type, spec] : job.replica_specs)
    if (job.IsMpiLauncher(type) && job.ReplicasOf(type) > 0)
      return api::ReplicaSpecPath(job, type) +
             ": mpirun runs as root here (trainctl run is root), so the launcher gets "
             "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; on a cluster its "
             "pod runs as the image's user";
  return std::nullopt;
}

}  // namespace trainctl::local
