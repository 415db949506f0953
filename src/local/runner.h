// The local substrate: runs one job as local process groups until it finishes.
//
// Each pass observes the replicas (processes), asks the engine for a plan and carries it out:
// start replicas, stop them (SIGTERM, then SIGKILL after the grace period), restart them in
// place as a kubelet would, and persist status, replica records and events in the job's state
// folder. Stops every replica before returning, also on SIGINT/SIGTERM (the second signal
// kills at once). Single-threaded; one Runner per job.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/clock.h"
#include "common/status.h"
#include "engine/plan.h"
#include "local/cgroup_plan.h"
#include "local/gpus.h"
#include "local/launcher.h"
#include "local/local_config.h"
#include "local/replica_launch.h"
#include "local/state_store.h"

namespace trainctl::local {

struct RunOptions {
  std::string manifest_dir;           // relative paths in the job resolve here
  std::string state_root;             // DefaultStateRoot() unless overridden
  bool replace = false;               // replace a finished job of the same name
  Duration grace{5000};               // SIGTERM → SIGKILL
  Duration drain{10000};              // after success, wait this long for the others to exit
  std::vector<std::string> base_env;  // the caller's environment
  // Called once, when the job's state folder is set up (job.json written, lock held) or setup
  // failed, before any replica starts: `trainctl run --detach` returns to its caller here.
  std::function<void(const Status&, const JobDir&)> on_setup;
  // Called once when the run ends, with the job's final state written and the runner lock
  // still held, before a TTL that has passed removes the folder: the job history's capture.
  std::function<void(const JobDir&)> on_finished;
  // Starts the replicas' processes and waits on them; null: the operating system's
  // (OsProcessLauncher). Tests pass a scripted one.
  ProcessLauncher* launcher = nullptr;
  // The program that supervises each replica (local/supervisor.h), normally this trainctl
  // binary: with it, replicas and all they spawn die with the runner, also on SIGKILL. Empty:
  // replicas are the runner's children directly.
  std::string supervisor;
  // This machine's GPUs (local/gpu_inventory.h), read by the caller for a job that asks for
  // GPUs; such a job is refused without it. `gpu_share`: replicas and jobs may share devices.
  std::optional<GpuInventory> gpus;
  bool gpu_share = false;
  // ConfigMaps, Secrets, volumes and env files given on this machine (local/local_config.h).
  LocalConfig config;
  // Where replicas with CPU or memory limits get cgroups (local/cgroups.h, FindCgroupHost);
  // version 0: limits are not enforced. Needs `supervisor`, which puts replicas into them.
  CgroupHost cgroups;
  // Set: every replica but an idle one runs as a container of its image with this runtime
  // (local/container_runtime.h, found by ProbeRuntime); images are pulled by imagePullPolicy
  // first, and a pull that fails is ImagePullBackOff, retried with back-off, as a kubelet does.
  std::optional<RuntimeHost> runtime;
  // Serve Trainer v2.3's runtime status endpoint for the run (local/status_server.h) and give
  // its variables to the trainer's processes: a TrainJob's trainer step, every replica of a
  // kubeflow.org/v1 job. A server that cannot start is said once and the run goes on.
  bool serve_trainer_status = true;
};

// Receives what happens, for live progress. All calls come from the runner's thread.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnLogLine(const std::string& replica, const std::string& line) {}
  virtual void OnEvent(const engine::Event& event) {}
  virtual void OnConditions(const api::JobStatus& status) {}
  virtual void OnReplicas(const nlohmann::json& replicas) {}
  virtual void OnTick(const api::Job& job, const nlohmann::json& replicas, Time now) {}
  virtual void OnMessage(const std::string& message) {}
};

struct RunResult {
  nlohmann::json job;  // final object with status
  bool succeeded = false;
  int interrupted_by = 0;  // signal number when stopped by SIGINT/SIGTERM
};

// What BuildReplicaLaunch needs for replica `replica` of the job in `dir`, run with `options`,
// its devices chosen in `gpus`.
ReplicaLaunchInputs LaunchInputs(const RunOptions& options, const JobDir& dir,
                                 const std::string& replica, const GpuAssignment* gpus);

// The most replicas `trainctl run` starts for one job (each is a process group).
inline constexpr int32_t kMaxLocalReplicas = 1024;

// Checks everything that can be checked before starting (each replica's command exists, the
// job is not managed elsewhere, its limits parse, its GPUs exist on this machine); errors are
// kInvalid. Which devices are free is known only at set-up (kAlreadyExists then).
Status PreflightCheck(const api::Job& job, const RunOptions& options);

// Runs the job to its end. Never throws: an unexpected exception inside the loop stops every
// replica and comes back as an Internal error.
StatusOr<RunResult> RunJob(api::Job job, const RunOptions& options, const Clock& clock,
                           RunObserver* observer);

}  // namespace trainctl::local
