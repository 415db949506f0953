#include "local/replica_launch.h"

#include <unistd.h>

#include "api/kind_plugin.h"
#include "local/containers.h"
#include "local/local_nproc.h"
#include "local/mpi_local.h"
#include "local/replica_limits.h"
#include "local/torch_error.h"

namespace trainctl::local {

StatusOr<PreparedLaunch> BuildReplicaLaunch(const api::Job& job, const std::string& type, int index,
                                            const api::Endpoints& endpoints,
                                            const ReplicaLaunchInputs& inputs) {
  StatusOr<api::ReplicaEnv> env = api::PluginFor(job.kind).EnvFor(job, type, index, endpoints);
  if (!env.ok()) return InvalidError(env.status().message());
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
  if (inputs.init) {
    context.container = inputs.init;
    StatusOr<std::vector<LocalMount>> mounts = PlanMounts(
        job, type, index, inputs.job_folder, inputs.config ? *inputs.config : kNone, inputs.init);
    if (!mounts.ok()) return mounts.status();
    TRAINCTL_RETURN_IF_ERROR(CheckMounts(*mounts));
    context.mounts = std::move(mounts).value();
    return ResolveLaunch(job, type, index, *env, context);
  }
  if (inputs.gpus) context.resource_env = GpuEnv(VisibleGpus(job, *inputs.gpus, type, index));
  StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
  if (!limits.ok()) return limits.status();
  for (auto& entry : ThreadEnv(*limits)) context.resource_env.push_back(std::move(entry));
  if (!IsIdleReplica(job, type)) {
    StatusOr<std::vector<LocalMount>> mounts =
        PlanMounts(job, type, index, inputs.job_folder, inputs.config ? *inputs.config : kNone);
    if (!mounts.ok()) return mounts.status();
    TRAINCTL_RETURN_IF_ERROR(CheckMounts(*mounts));
    context.mounts = std::move(mounts).value();
  }
  if (job.info().IsLauncher(type))
    env->env = LocalMpiLauncherEnv(job, std::move(env->env), inputs.hostfile_path, geteuid() == 0,
                                   static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  StatusOr<PreparedLaunch> launch = IsIdleReplica(job, type)
                                        ? ResolveIdleLaunch(context)
                                        : ResolveLaunch(job, type, index, *env, context);
  if (!launch.ok() || inputs.error_file.empty()) return launch;
  const std::string key = std::string(kTorchElasticErrorFileEnv) + "=";
  for (const std::string& e : launch->spec.env)
    if (e.rfind(key, 0) == 0) return launch;  // the user's
  launch->spec.env.push_back(key + inputs.error_file);
  launch->env_sources.emplace_back(kTorchElasticErrorFileEnv, EnvSource::kRunner);
  return launch;
}

StatusOr<InitLaunches> BuildInitLaunches(const api::Job& job, const std::string& type, int index,
                                         const api::Endpoints& endpoints,
                                         const ReplicaLaunchInputs& inputs, size_t from) {
  InitLaunches out;
  if (IsIdleReplica(job, type)) return out;
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
