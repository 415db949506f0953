// LocalPod: one replica of a local run, kept as a kubelet keeps a pod — the image pulls before
// it starts (container runtime), its init containers in order, its main container, its exit,
// in-place restarts after the back-off, its cgroup and OOM kills, its log's last lines and how
// it ended. The run (local/runner.cc) is the job loop: it owns the pods, asks the engine, and
// starts, stops and reaps pods through these methods; everything a pod says goes through its
// PodContext (events, write errors), so the loop stays testable with a scripted launcher.
//
// The kubelet's rules (back-off, what an exit means) are pure in local/kubelet.h; this file
// carries them out for one pod. Single-threaded: the runner's thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/restart_policy.h"
#include "common/clock.h"
#include "common/status.h"
#include "engine/plan.h"
#include "local/cgroup_plan.h"
#include "local/gpus.h"
#include "local/launcher.h"
#include "local/replica_launch.h"
#include "local/state_store.h"

namespace trainctl::local {

struct RunOptions;

// What the pods of one run share, owned by the run and outliving its pods.
struct PodContext {
  const api::Job* job = nullptr;
  const RunOptions* options = nullptr;
  ProcessLauncher* launcher = nullptr;
  const JobDir* dir = nullptr;
  const GpuAssignment* gpus = nullptr;
  std::string cgroup_job;                     // the job cgroup's name; "" : limits not enforced
  std::map<std::string, bool> image_present;  // container runtime: images known present
  long long exits = 0;                        // exits so far in the run, for their order
  // The run's live state: this pass's times, and the signal that stopped the run (0: none).
  const Time* now = nullptr;
  const MonoTime* mono = nullptr;
  const int* interrupted_by = nullptr;
  // Records an event (object "" : the job).
  std::function<void(const engine::Event&, Time, const std::string& object)> emit;
  // Says (once per distinct error) that a state write failed.
  std::function<void(const Status&, const char* what)> report;
  // Reads the replica's new log lines now (before its last lines are taken).
  std::function<void(const std::string& replica, bool flush)> tail_log;
};

// What a replica keeps of its current run's output for a process failure's "last output".
inline constexpr size_t kRecentOutputBytes = 2048;

class LocalPod {
 public:
  std::string name, type;
  int index = 0;
  engine::Phase phase = engine::Phase::kPending;
  std::optional<int> exit_code;
  int restarts = 0;
  int attempt = 0;      // its incarnations so far (container names, cgroups)
  int job_attempt = 0;  // the job's attempt it belongs to (gang restart; label and env)
  // Checkpoint notice (local/notice_files.h): its folder ("" : the job has no notice policy),
  // the notice it was told ("" : none) and whether it reported done (read each pass).
  std::string notice_folder;
  std::string notice;
  bool notice_done = false;
  bool terminating = false;
  bool deleted = false;
  std::unique_ptr<ReplicaProcess> process;
  std::optional<Time> started, finished;
  std::optional<MonoTime> restart_at, kill_at;  // deadlines: monotonic
  api::RestartPolicy pod_policy = api::RestartPolicy::kNever;
  std::string command;
  std::string message;
  std::string last_lines;           // the end of its log (or its root cause) when it last exited
  long long log_start = 0;          // its log's size when its main container last started
  std::string error_file;           // TORCHELASTIC_ERROR_FILE given to it; "" when the user's
  std::optional<Time> last_output;  // when its log last grew
  // The end of what its current run printed (at most kRecentOutputBytes, whole lines), and a
  // process of it that failed while it runs (torchrun's report, api/torchrun_report.h).
  std::string recent_output;
  std::optional<engine::ReplicaObservation::ProcessExit> process_failure;
  int port = 0;
  long long exit_seq = 0;  // order of this replica's last exit within the run
  CgroupPlan cgroup;       // its cgroups while it runs (none without enforced limits)
  // Its init containers still to run (local/containers.h), then its main container: `step`
  // indexes `inits`, and equals inits.size() once the main container runs.
  std::vector<InitLaunch> inits;
  size_t step = 0;
  size_t step_base = 0;   // the index of inits[0] among all its init containers
  size_t init_total = 0;  // all its init containers
  PreparedLaunch main;
  bool init_failed = false;  // its last exit was an init container's
  std::optional<int64_t> memory_limit;
  bool oom_killed = false;  // its last exit came with an OOM kill in its cgroup
  Duration backoff{0};      // the back-off it waits for, while restart_at is set
  // How its run before the last in-place restart ended (the kubelet's lastState), kept while
  // it runs again.
  struct LastEnd {
    int exit_code = 0;
    std::optional<Time> finished;
    std::string reason;
    std::string output;
  };
  std::optional<LastEnd> last_end;
  int oom_watch = -1;  // WatchOomEvents on its cgroup while its container runs (v1)
  // Container runtime only: images still to pull before its steps start (the runtime's pull
  // runs as the replica's process meanwhile), failed pulls in a row, the retry's deadline and
  // the last pull's output; an image that is missing under imagePullPolicy Never.
  std::vector<std::string> pulls;
  bool pulling = false;
  int pull_failures = 0;
  std::optional<MonoTime> pull_at;
  std::string pull_message;
  std::string never_pull;  // the message, when set

  // The images it must pull before its steps (container runtime only), by imagePullPolicy.
  void PlanPulls(PodContext& ctx);
  // Starts its current step: a pull, an init container or the main one.
  void SpawnStep(PodContext& ctx);
  // Reaps its process once it has ended: the next step, a restart after the back-off, or its
  // end (phase). Nothing when its process still runs.
  void Reap(PodContext& ctx);
  // A due retry of a failed pull.
  void PullIfDue(PodContext& ctx);
  // SIGTERM to its group (SIGKILL after the grace period, by KillIfOverdue).
  void Terminate(PodContext& ctx);
  void KillIfOverdue(PodContext& ctx);
  // True while it (or a restart it waits for) still counts as alive.
  bool Alive() const;
  // The soonest deadline it waits for (restart, pull retry, kill), if any.
  std::optional<MonoTime> NextDeadline() const;
  // Reads one line it printed (the runner's log tail): keeps the recent output and records
  // the first failed process torchrun reports for its current run, at `now`.
  void ReadOutputLine(const std::string& line, Time now);
  // As the engine sees it (deleted pods are not observed: callers skip them).
  engine::ReplicaObservation Observe() const;
  // Its row in replicas.json.
  nlohmann::json ToJson(const api::Job& job, const GpuAssignment& gpus) const;
  // How its last run ended, as a container's terminated reason ("" while it has not).
  std::string EndReason() const;

 private:
  // Makes its cgroups for its limits and names them in `spec` (no limit, or none enforceable
  // here: nothing).
  Status JoinCgroup(PodContext& ctx, LaunchSpec& spec);
  // Reads whether it was OOM-killed and removes its cgroups, once its processes are gone.
  void ReleaseCgroup(PodContext& ctx);
  // Names the container of `launch` for its current attempt and step, puts it under its
  // cgroup where the runtime can take it, and sets its command line.
  void PrepareContainer(PodContext& ctx, PreparedLaunch& launch, bool init);
  void ReapPull(PodContext& ctx, int code);
};

}  // namespace trainctl::local
