#include "local/dry_run.h"

#include <map>

#include "local/cgroup_plan.h"
#include "local/device_claims.h"
#include "local/endpoints.h"
#include "local/replica_launch.h"
#include "local/runtime_probe.h"
#include "local/state_store.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

const char* SourceName(EnvSource source) {
  switch (source) {
    case EnvSource::kResources:
      return "resources";
    case EnvSource::kTemplate:
      return "template";
    case EnvSource::kInjected:
      return "trainctl";
    case EnvSource::kRunner:
      return "runner";
    case EnvSource::kEnvFile:
      return "env-file";
  }
  return "template";
}

}  // namespace

StatusOr<json> PlanDryRun(const api::Job& job, const RunOptions& options) {
  TRAINCTL_RETURN_IF_ERROR(PreflightCheck(job, options));
  JobDir dir(options.state_root, {job.kind, job.namespace_, job.name});
  StatusOr<std::vector<GpuAsk>> asks = GpuAsks(job);
  if (!asks.ok()) return asks.status();
  GpuAssignment gpus;
  json out = {{"kind", job.info().name},
              {"namespace", job.namespace_},
              {"name", job.name},
              {"inheritedEnv", options.base_env.size()}};
  if (options.runtime)
    out["runtime"] = {{"name", RuntimeName(options.runtime->kind)},
                      {"binary", options.runtime->binary},
                      {"version", options.runtime->version}};
  if (!asks->empty() && options.gpus) {
    std::vector<DeviceClaim> held = ReadDeviceClaims(options.state_root, dir.key());
    StatusOr<GpuAssignment> chosen = AssignGpus(job, *asks, *options.gpus, held, options.gpu_share);
    if (!chosen.ok()) return chosen.status();
    gpus = std::move(chosen).value();
    out["gpuInventory"] = {{"source", options.gpus->source},
                           {kNvidiaGpu, options.gpus->Count(kNvidiaGpu)},
                           {kAmdGpu, options.gpus->Count(kAmdGpu)}};
  }
  StatusOr<LocalEndpoints> endpoints = LocalEndpoints::Allocate(job);
  if (!endpoints.ok()) return endpoints.status();
  json replicas = json::array();
  std::map<std::string, bool> present_images;  // asked once per image
  for (const auto& [type, spec] : job.replica_specs) {
    for (int index = 0; index < job.ReplicasOf(type); ++index) {
      std::string name = api::ReplicaName(job, type, index);
      ReplicaLaunchInputs inputs = LaunchInputs(options, dir, name, &gpus);
      StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, type, index, *endpoints, inputs);
      json replica_image = nullptr;
      if (!launch.ok()) return launch.status();
      json env = json::array();
      for (const auto& [var, source] : launch->env_sources) {
        std::string value;
        for (const std::string& e : launch->spec.env)
          if (e.size() > var.size() && e.compare(0, var.size() + 1, var + "=") == 0)
            value = e.substr(var.size() + 1);
        env.push_back({{"name", var}, {"value", value}, {"source", SourceName(source)}});
      }
      json devices = json::array();
      for (const Gpu& g : VisibleGpus(job, gpus, type, index))
        devices.push_back(
            {{"resource", g.resource}, {"index", g.index}, {"id", g.id}, {"name", g.name}});
      json mounts = json::array();
      for (const LocalMount& m : launch->mounts)
        mounts.push_back(
            {{"volume", m.volume}, {"mountPath", m.mount_path}, {"path", m.local_path}});
      // The cgroup files a run would write (a run names the job cgroup after its own pid).
      json cgroup = json::array();
      StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
      if (!limits.ok()) return limits.status();
      for (const CgroupWrite& w :
           !job.MpiLauncherGroup().empty()
               ? std::vector<CgroupWrite>()
               : PlanReplicaCgroup(options.cgroups, "trainctl-PID", name + ".1", *limits).writes)
        cgroup.push_back({{"file", w.file}, {"value", w.value}});
      json inits = json::array();
      StatusOr<InitLaunches> built = BuildInitLaunches(job, type, index, *endpoints, inputs);
      if (!built.ok()) return built.status();
      for (const InitLaunch& init : built->launches)
        inits.push_back({{"name", init.name},
                         {"command", init.launch.spec.argv},
                         {"workingDir", init.launch.spec.cwd}});
      if (launch->container) {
        // What a run would do about the image first (it asks the runtime's store now).
        const std::string& image = launch->container->image;
        auto known = present_images.find(image);
        bool present =
            known != present_images.end()
                ? known->second
                : (present_images[image] = ImagePresent(*options.runtime, options.base_env, image));
        PullAction action = DecidePull(image, launch->pull_policy, present);
        std::string policy = launch->pull_policy.empty() ? "default" : launch->pull_policy;
        replica_image = {{"image", image},
                         {"present", present},
                         {"pull", action == PullAction::kPull ? "pulled first (" + policy + ")"
                                  : action == PullAction::kNone
                                      ? std::string("present, not pulled")
                                      : "missing and never pulled: ErrImageNeverPull"}};
      }
      replicas.push_back({{"name", name},
                          {"image", replica_image},
                          {"initContainers", inits},
                          {"cgroup", cgroup},
                          {"mounts", mounts},
                          {"type", type},
                          {"index", index},
                          {"command", launch->spec.argv},
                          {"workingDir", !launch->container ? launch->spec.cwd
                                         : launch->container->working_dir.empty()
                                             ? "(the image's)"
                                             : launch->container->working_dir},
                          {"port", endpoints->Port(type, index, 0)},
                          {"env", env},
                          {"gpus", devices}});
    }
  }
  out["replicas"] = replicas;
  return out;
}

}  // namespace trainctl::local
