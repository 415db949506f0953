#include "local/replica_launch.h"

#include <unistd.h>

#include "api/checkpoint_notice.h"
#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "api/restart_scope.h"
#include "local/containers.h"
#include "local/local_nproc.h"
#include "local/mpi_local.h"
#include "local/notice_files.h"
#include "local/replica_limits.h"
#include "local/torch_error.h"

namespace trainctl::local {
namespace {

// Names, labels, limits, devices and extra mounts of a container launch, then its command line.
void FinishContainer(const api::Job& job, const std::string& type, int index,
                     const api::Endpoints& endpoints, const ReplicaLaunchInputs& inputs,
                     const ReplicaLimits* limits, PreparedLaunch& launch) {
  ContainerRun& run = *launch.container;
  std::string replica = api::ReplicaName(job, type, index);
  if (LocalMpiModeOf(job, true) == LocalMpiMode::kSsh && !inputs.init &&
      (job.IsMpiLauncher(type) || ServesLauncherOnly(job, type))) {
    // As in the pods: the key folder at sshAuthMountPath, the pod's host name; a worker's sshd
    // on its own port (the network is this machine's).
    run.hostname = replica;
    if (!inputs.ssh_folder.empty())
      run.mounts.push_back({inputs.ssh_folder, job.ssh_auth_mount_path, /*read_only=*/true});
    if (ServesLauncherOnly(job, type)) {
      int port = endpoints.Port(type, index, 22);
      SetLocalSshdPort(port, &run.command, &run.args);
      launch.spec.env.push_back(std::string(kLocalSshPortEnv) + "=" + std::to_string(port));
      launch.env_sources.emplace_back(kLocalSshPortEnv, EnvSource::kRunner);
    }
  }
  run.name = ContainerName(job.namespace_, job.info().name, replica, 1,
                           inputs.init ? api::StringAt(*inputs.init->container, "name") : "");
  run.labels = {{kLabelRunnerPid, std::to_string(getpid())},
                {kLabelJob, ContainerJobLabel(job.kind, job.namespace_, job.name)}};
  run.env = launch.spec.env;
  if (limits && inputs.runtime->own_limits) {
    // The runner puts the container under the replica's cgroup where it can (the limits are
    // set there); these stand in until then, and for --dry-run.
    if (limits->memory_is_limit) run.memory_bytes = limits->memory_bytes;
    if (limits->cpu_is_limit && limits->cpu_milli)
      run.cpus = static_cast<double>(*limits->cpu_milli) / 1000.0;
  }
  if (inputs.gpus && !inputs.init)
    for (const Gpu& g : VisibleGpus(job, *inputs.gpus, type, index))
      run.gpus.push_back(std::to_string(g.index));
  if (job.IsMpiLauncher(type) && !inputs.hostfile_path.empty())
    run.mounts.push_back({inputs.hostfile_path, inputs.hostfile_path, /*read_only=*/true});
  ApplyContainerRun(launch, *inputs.runtime, inputs.base_env);
  launch.command_field = "(image " + run.image + ")";
}

}  // namespace

StatusOr<PreparedLaunch> BuildReplicaLaunch(const api::Job& job, const std::string& type, int index,
                                            const api::Endpoints& endpoints,
                                            const ReplicaLaunchInputs& inputs) {
  StatusOr<api::ReplicaEnv> env = api::PluginFor(job.kind).EnvFor(job, type, index, endpoints);
  if (!env.ok()) return InvalidError(env.status().message());
  api::AppendRestartAttemptEnv(job, &*env);
  StatusOr<std::optional<LocalNproc>> nproc = ResolveLocalNproc(job);
  if (!nproc.ok()) return nproc.status();
  if (*nproc) ApplyLocalNproc(**nproc, type, &env->env);
  LaunchContext context;
  context.manifest_dir = inputs.manifest_dir;
  context.base_env = inputs.base_env;
  context.labels = {{api::kLabelJobName, job.name},
                    {api::kLabelReplicaType, api::ToLower(type)},
                    {api::kLabelReplicaIndex, std::to_string(index)}};
  static const LocalConfig kNone;
  context.config = inputs.config;
  bool containers = inputs.runtime != nullptr;
  bool in_container = containers && !IsIdleReplica(job, type, containers);
  context.in_container = in_container;
  if (inputs.init) {
    context.container = inputs.init;
    StatusOr<std::vector<LocalMount>> mounts = PlanMounts(
        job, type, index, inputs.job_folder, inputs.config ? *inputs.config : kNone, inputs.init);
    if (!mounts.ok()) return mounts.status();
    TRAINCTL_RETURN_IF_ERROR(CheckMounts(*mounts));
    context.mounts = std::move(mounts).value();
    if (!in_container) return ResolveLaunch(job, type, index, *env, context);
    StatusOr<PreparedLaunch> launch = PrepareLaunch(job, type, index, *env, context);
    if (launch.ok()) FinishContainer(job, type, index, endpoints, inputs, nullptr, *launch);
    return launch;
  }
  // In a container the runtime hands over only the replica's devices (as a device plugin
  // does), so no visibility variable narrows them further.
  if (inputs.gpus && !in_container)
    context.resource_env = GpuEnv(VisibleGpus(job, *inputs.gpus, type, index));
  StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
  if (!limits.ok()) return limits.status();
  for (auto& entry : ThreadEnv(*limits)) context.resource_env.push_back(std::move(entry));
  if (!IsIdleReplica(job, type, containers)) {
    StatusOr<std::vector<LocalMount>> mounts =
        PlanMounts(job, type, index, inputs.job_folder, inputs.config ? *inputs.config : kNone);
    if (!mounts.ok()) return mounts.status();
    TRAINCTL_RETURN_IF_ERROR(CheckMounts(*mounts));
    context.mounts = std::move(mounts).value();
  }
  if (job.IsMpiLauncher(type))
    env->env = LocalMpiLauncherEnv(job, std::move(env->env), inputs.hostfile_path, geteuid() == 0,
                                   static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)),
                                   LocalMpiModeOf(job, containers));
  StatusOr<PreparedLaunch> launch = in_container ? PrepareLaunch(job, type, index, *env, context)
                                    : IsIdleReplica(job, type, containers)
                                        ? ResolveIdleLaunch(context)
                                        : ResolveLaunch(job, type, index, *env, context);
  if (!launch.ok()) return launch;
  const std::string key = std::string(kTorchElasticErrorFileEnv) + "=";
  bool users = false;
  for (const std::string& e : launch->spec.env) users = users || e.rfind(key, 0) == 0;
  if (!inputs.error_file.empty() && !users) {
    launch->spec.env.push_back(key + inputs.error_file);
    launch->env_sources.emplace_back(kTorchElasticErrorFileEnv, EnvSource::kRunner);
    launch->error_file = inputs.error_file;
  }
  if (!inputs.notice_folder.empty() && !inputs.init) {
    launch->spec.env.push_back(std::string(api::kNoticeFileEnv) + "=" +
                               NoticeFilePath(inputs.notice_folder));
    launch->spec.env.push_back(std::string(api::kNoticeDoneFileEnv) + "=" +
                               NoticeDonePath(inputs.notice_folder));
    launch->env_sources.emplace_back(api::kNoticeFileEnv, EnvSource::kRunner);
    launch->env_sources.emplace_back(api::kNoticeDoneFileEnv, EnvSource::kRunner);
    if (in_container)
      launch->container->mounts.push_back(
          {inputs.notice_folder, inputs.notice_folder, /*read_only=*/false});
  }
  if (!inputs.status_env.empty() && !inputs.init) {
    for (const auto& [name, value] : inputs.status_env) {
      bool set = false;
      for (const std::string& e : launch->spec.env) set = set || e.rfind(name + "=", 0) == 0;
      if (set) continue;  // the template's own wins
      launch->spec.env.push_back(name + "=" + value);
      launch->env_sources.emplace_back(name, EnvSource::kRunner);
    }
    if (in_container && !inputs.status_folder.empty())
      launch->container->mounts.push_back(
          {inputs.status_folder, inputs.status_folder, /*read_only=*/true});
  }
  if (in_container) {
    // The error file's own folder is mounted at the same path, so the runner reads what
    // torchrun writes in the container.
    if (!launch->error_file.empty()) {
      std::string folder = launch->error_file.substr(0, launch->error_file.rfind('/'));
      launch->container->mounts.push_back({folder, folder, /*read_only=*/false});
    }
    FinishContainer(job, type, index, endpoints, inputs, &*limits, *launch);
  }
  return launch;
}

StatusOr<InitLaunches> BuildInitLaunches(const api::Job& job, const std::string& type, int index,
                                         const api::Endpoints& endpoints,
                                         const ReplicaLaunchInputs& inputs, size_t from) {
  InitLaunches out;
  if (IsIdleReplica(job, type, inputs.runtime != nullptr)) return out;
  StatusOr<std::vector<InitStep>> steps = InitStepsOf(job, type);
  if (!steps.ok()) return steps.status();
  out.total = steps->size();
  ReplicaLaunchInputs init_inputs = inputs;
  for (size_t i = from; i < steps->size(); ++i) {
    init_inputs.init = &(*steps)[i].at;
    StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, type, index, endpoints, init_inputs);
    if (!launch.ok()) return launch.status();
    out.launches.push_back({(*steps)[i].name, std::move(launch).value()});
  }
  return out;
}

}  // namespace trainctl::local
