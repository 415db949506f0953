#include "local/prepare_run.h"

#include <unistd.h>

#include <filesystem>

#include "local/cgroup_plan.h"
#include "local/cgroups.h"
#include "local/containers.h"
#include "local/gpu_inventory.h"
#include "local/gpus.h"
#include "local/mpi_local.h"
#include "local/runtime_probe.h"
#include "local/volumes.h"

namespace trainctl::local {
namespace fs = std::filesystem;

StatusOr<PreparedRun> PrepareRun(const api::Job& job, const RunFlags& flags) {
  if (job.runtime && job.runtime->policy == api::MlPolicy::kFlux)
    return InvalidError(flags.source + ": TrainJob " + job.name + ": the runtime " +
                        job.runtime->name + " (" + job.runtime->source + ") has mlPolicy " +
                        api::MlPolicyName(job.runtime->policy) +
                        ", which trainctl run does not run yet (torch, mpi, jax, xgboost and "
                        "plain runtimes do)");
  PreparedRun out;
  RunOptions& run = out.options;
  bool from_stdin = flags.manifest == "-";
  if (!flags.workdir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(flags.workdir, ec))
      return InvalidError("--workdir: \"" + flags.workdir + "\" is not a folder");
    run.manifest_dir = fs::absolute(fs::path(flags.workdir)).lexically_normal().string();
  } else {
    run.manifest_dir =
        from_stdin ? flags.cwd : fs::absolute(fs::path(flags.manifest)).parent_path().string();
  }
  run.state_root = flags.state_root;
  run.replace = flags.replace;
  run.grace = Duration(static_cast<long long>(flags.grace_seconds * 1000));
  run.drain = Duration(static_cast<long long>(flags.drain_seconds * 1000));
  run.supervisor = flags.supervisor;
  run.base_env = flags.env;
  run.gpu_share = flags.gpu_share;
  StatusOr<LocalConfig> config = ReadLocalConfig(flags.config, flags.cwd);
  if (!config.ok()) return config.status();
  run.config = std::move(config).value();
  run.config.claims_dir = ClaimFolder(run.state_root, job.namespace_, "");
  run.config.claims_dir.pop_back();  // no trailing '/'

  StatusOr<std::vector<GpuAsk>> gpu_asks = GpuAsks(job);
  if (!gpu_asks.ok()) return InvalidError(flags.source + ": " + gpu_asks.status().message());
  if (!gpu_asks->empty()) {
    StatusOr<GpuInventory> inventory = ReadGpuInventory(run.base_env);
    if (!inventory.ok()) return InvalidError(inventory.status().message());
    run.gpus = std::move(inventory).value();
  }
  StatusOr<RuntimeKind> runtime = ChooseRuntime(flags.runtime, job, run.base_env);
  if (!runtime.ok()) return InvalidError(flags.source + ": " + runtime.status().message());
  if (*runtime != RuntimeKind::kProcess) {
    // The runtime's GPU support matters only for a job this machine's GPUs can hold; the
    // pre-flight says so otherwise, with the counts.
    bool gpus_fit =
        !gpu_asks->empty() && run.gpus && AssignGpus(job, *gpu_asks, *run.gpus, {}, true).ok();
    StatusOr<RuntimeHost> host = ProbeRuntime(*runtime, run.base_env, gpus_fit);
    if (!host.ok()) return InvalidError(host.status().message());
    out.notes.insert(out.notes.end(), host->notes.begin(), host->notes.end());
    run.runtime = std::move(host).value();
  }
  for (std::string& note : RunNotes(job)) out.notes.push_back(std::move(note));
  LocalMpiMode mpi = LocalMpiModeOf(job, run.runtime.has_value());
  if (std::optional<std::string> note = LocalMpiRootNote(job, geteuid() == 0, mpi))
    out.notes.push_back(*note);
  if (std::optional<std::string> note = LocalMpiWorkerNote(job, mpi)) out.notes.push_back(*note);
  if (HasLimits(job)) run.cgroups = FindCgroupHost(run.base_env);
  if (std::optional<std::string> note = UnenforcedLimitsNote(job, run.cgroups))
    out.notes.push_back(*note);
  return out;
}

StatusOr<std::vector<std::string>> MakeClaimFolders(const std::string& state_root,
                                                    const std::vector<api::ClaimDocument>& claims) {
  std::vector<std::string> notes;
  for (const api::ClaimDocument& claim : claims) {
    std::string folder = ClaimFolder(state_root, claim.namespace_, claim.name);
    std::error_code ec;
    bool made = fs::create_directories(folder, ec);
    if (ec)
      return IoError("PersistentVolumeClaim " + claim.name + ": " + folder + ": " + ec.message());
    notes.push_back("PersistentVolumeClaim " + claim.namespace_ + "/" + claim.name + ": " + folder +
                    (made ? " (made; " : " (kept from earlier jobs; ") + "trainctl claims delete " +
                    claim.name + " removes it)");
  }
  return notes;
}

}  // namespace trainctl::local
