#include "local/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>

#include "api/kind_plugin.h"
#include "api/metrics_policy.h"
#include "api/restart_policy.h"
#include "api/validation.h"
#include "common/text.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "local/cgroups.h"
#include "local/device_claims.h"
#include "local/endpoints.h"
#include "local/kubelet.h"
#include "local/launch.h"
#include "local/launcher.h"
#include "local/log_tailer.h"
#include "local/mpi_local.h"
#include "local/replica_launch.h"
#include "local/replica_limits.h"
#include "local/runtime_probe.h"
#include "local/torch_error.h"
#include "metrics/series.h"

namespace trainctl::local {
namespace {

using engine::Phase;

// How much of a replica's log end is kept as its last output (the engine bounds what reaches
// the status again).
constexpr size_t kLastLinesBytes = 2048;
// A Started event shows this much of the command (describe's replica table and -o json, the
// whole): train()'s JSON arguments run to kilobytes.
constexpr size_t kEventCommandBytes = 240;
using nlohmann::json;

std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
int g_wake_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  g_last_signal = sig;
  g_signal_count++;
  if (g_wake_pipe[1] >= 0) (void)!write(g_wake_pipe[1], "x", 1);
}

// Installs SIGINT/SIGTERM handlers for the lifetime of a run; restores them after.
class SignalScope {
 public:
  SignalScope() {
    g_signal_count = 0;
    g_last_signal = 0;
    if (pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_wake_pipe[0] = g_wake_pipe[1] = -1;
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    for (int& fd : g_wake_pipe) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct Replica {
  std::string name, type;
  int index = 0;
  Phase phase = Phase::kPending;
  std::optional<int> exit_code;
  int restarts = 0;
  int attempt = 0;
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
};

// The last line of `text` that is not blank (a runtime's pull prints its error last).
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// How a replica's last run ended, as a container's terminated reason.
std::string EndReason(const Replica& r) {
  if (!r.exit_code) return "";
  return !r.message.empty()  ? "StartError"
         : r.init_failed     ? "Init:Error"
         : r.oom_killed      ? "OOMKilled"
         : *r.exit_code == 0 ? "Completed"
                             : "Error";
}

class Run {
 public:
  Run(api::Job job, const RunOptions& options, const Clock& clock, RunObserver* observer)
      : job_(std::move(job)),
        options_(options),
        clock_(clock),
        observer_(observer),
        os_launcher_(Supervision{options.supervisor, options.grace}),
        launcher_(options.launcher ? options.launcher : &os_launcher_),
        dir_(options.state_root, {job_.kind, job_.namespace_, job_.name}) {
    if (std::optional<api::MetricsPolicy> m = api::MetricsPolicyOf(job_))
      metrics_replica_ = api::ReplicaName(job_, m->type, m->index);
  }

  ~Run();
  StatusOr<RunResult> Execute();

 private:
  // Makes replica `r`'s cgroups for its limits and names them in `spec` (no limit, or none
  // enforceable here: nothing).
  Status JoinCgroup(Replica& r, LaunchSpec& spec);
  // Reads whether `r` was OOM-killed and removes its cgroups, once its processes are gone.
  void ReleaseCgroup(Replica& r);
  Status Setup();
  // The job's GPUs among those no other running job holds (none asked: empty).
  StatusOr<GpuAssignment> ChooseGpus() const;
  // ChooseGpus and records the choice, under the state folder's device lock.
  Status ClaimGpus();
  void Reap(Time now);
  void StartDueRestarts(Time now);
  void StartDuePulls(Time now);
  // The images `r` must pull before its steps (container runtime only), by imagePullPolicy.
  void PlanPulls(Replica& r);
  // Names the container of `launch` for `r`'s current attempt and step, puts it under `r`'s
  // cgroup where the runtime can take it, and sets its command line.
  void PrepareContainer(Replica& r, PreparedLaunch& launch, bool init);
  void KillOverdue(Time now);
  void ApplyPlan(const engine::Plan& plan, Time now);
  // Starts replica (type, index): its init containers from `resume_step` on (the one that
  // failed, when the kubelet would restart it in place), then its main container. A new
  // replica is a pod creation; `in_place` (a restart after a back-off) is not.
  void Start(const std::string& type, int index, Time now, size_t resume_step = 0,
             bool in_place = false);
  // Spawns `r`'s current step (an init container or the main one).
  void SpawnStep(Replica& r, Time now);
  void Terminate(Replica& r, Time now);
  void TerminateAll(Time now);
  bool AnyAlive() const;
  std::vector<engine::ReplicaObservation> Observe() const;
  void Emit(const engine::Event& event, Time now, const std::string& object = "");
  json ReplicasJson() const;
  void Persist(bool force);
  void TailLogs(bool flush);
  void TailLog(const std::string& name, bool flush);
  int WaitTimeoutMs(Time now, const std::optional<Duration>& requeue) const;
  void WaitForActivity(int timeout_ms);
  // Tells the user (once per distinct error) that a state write failed: the run goes on, but
  // `trainctl get` may show stale state.
  void Report(const Status& written, const char* what);

  api::Job job_;
  RunOptions options_;
  const Clock& clock_;
  RunObserver* observer_;
  OsProcessLauncher os_launcher_;
  ProcessLauncher* launcher_;
  JobDir dir_;
  std::optional<LocalEndpoints> endpoints_;
  std::map<std::string, Replica> replicas_;
  LogTailer tailer_;
  json last_replicas_json_;
  int interrupted_by_ = 0;
  int signals_handled_ = 0;
  std::optional<MonoTime> drain_started_;
  MonoTime mono_{};  // the monotonic time of this pass, read with `now`
  Time now_{};       // the wall time of this pass
  bool delete_job_ = false;
  long long exits_ = 0;
  std::string last_write_error_;
  GpuAssignment gpus_;      // replica name → its devices
  std::string cgroup_job_;  // the job cgroup's name; "" when limits are not enforced
  // The replica whose output becomes metric series ("" when metrics are off), and how many
  // records were written (recording stops at metrics::kMaxRecordsPerJob).
  std::string metrics_replica_;
  size_t metric_records_ = 0;
  std::map<std::string, bool> image_present_;  // container runtime: images known present
};

void Run::Report(const Status& written, const char* what) {
  if (written.ok() || written.message() == last_write_error_) return;
  last_write_error_ = written.message();
  if (observer_)
    observer_->OnMessage(std::string("warning: could not write ") + what + " to " + dir_.path() +
                         ": " + written.message());
}

Run::~Run() {
  if (cgroup_job_.empty()) return;
  std::vector<std::string> dirs;
  for (const auto& [name, r] : replicas_)
    dirs.insert(dirs.end(), r.cgroup.remove_dirs.begin(), r.cgroup.remove_dirs.end());
  replicas_.clear();  // kills and reaps whatever is left, so the cgroups can go
  for (const std::string& dir : JobCgroupDirs(options_.cgroups, cgroup_job_)) dirs.push_back(dir);
  RemoveCgroupDirs(dirs).IgnoreError();
  RemoveOtherJobCgroups(options_.cgroups, cgroup_job_);
}

Status Run::JoinCgroup(Replica& r, LaunchSpec& spec) {
  if (cgroup_job_.empty() || job_.info().has_launcher()) return Status::Ok();
  // A runtime that cannot take the replica's cgroup as the container's parent enforces the
  // limits itself (--memory, --cpus).
  if (r.main.container && !options_.runtime->cgroup_parent) return Status::Ok();
  StatusOr<ReplicaLimits> limits = LimitsOf(job_, r.type);
  if (!limits.ok()) return limits.status();
  if (limits->memory_is_limit) r.memory_limit = limits->memory_bytes;
  r.cgroup = PlanReplicaCgroup(options_.cgroups, cgroup_job_,
                               r.name + "." + std::to_string(r.attempt), *limits);
  if (r.cgroup.dirs.empty()) return Status::Ok();
  std::vector<std::string> skipped;
  TRAINCTL_RETURN_IF_ERROR(MakeReplicaCgroup(r.cgroup, &skipped));
  for (const std::string& why : skipped)
    Emit({"Warning", "LimitNotEnforced", r.name + ": " + why}, now_, "Pod/" + r.name);
  spec.cgroup_procs = r.cgroup.procs;
  return Status::Ok();
}

void Run::ReleaseCgroup(Replica& r) {
  int64_t below = TakeOomEvents(r.oom_watch);  // a container's kills happen in its own cgroup
  r.oom_watch = -1;
  if (r.cgroup.dirs.empty()) return;
  // A kill in the cgroup while the replica still exited 0 was a helper's, not the replica's end.
  r.oom_killed = (ReadOomKills(r.cgroup) > 0 || below > 0) && r.exit_code && *r.exit_code != 0;
  Report(RemoveCgroupDirs(r.cgroup.remove_dirs), "(removing) a replica's cgroup");
  r.cgroup = CgroupPlan();
}

Status Run::Setup() {
  // Devices others hold are checked before anything here changes (a --replace keeps the old
  // job when they are known to be busy), and claimed for real under the lock below.
  TRAINCTL_RETURN_IF_ERROR(ChooseGpus().status());
  if (dir_.Exists()) {
    if (dir_.RunnerActive())
      return AlreadyExistsError(std::string(job_.info().name) + " " + job_.namespace_ + "/" +
                                job_.name +
                                " is already running (trainctl run in another "
                                "terminal); stop it with trainctl delete, or rename the job");
    if (!options_.replace)
      return AlreadyExistsError(std::string(job_.info().name) + " " + job_.namespace_ + "/" +
                                job_.name + " already exists in " + dir_.path() +
                                "; delete it (trainctl delete " + api::ToLower(job_.info().name) +
                                " " + job_.name + ") or run with --replace");
    TRAINCTL_RETURN_IF_ERROR(dir_.RemoveAll());
  }
  TRAINCTL_RETURN_IF_ERROR(dir_.Create());
  TRAINCTL_RETURN_IF_ERROR(dir_.AcquireRunnerLock());
  if (Status claimed = ClaimGpus(); !claimed.ok()) {
    // Taken in between by another job: leave no folder behind, as if nothing had started.
    dir_.ReleaseRunnerLock();
    (void)dir_.RemoveAll();
    return claimed;
  }
  if (options_.cgroups.version != 0) {
    RemoveStaleJobCgroups(options_.cgroups);
    cgroup_job_ = JobCgroupName();
  }
  if (options_.runtime) {
    std::vector<std::string> removed =
        RemoveLeftoverContainers(*options_.runtime, options_.base_env);
    if (!removed.empty() && observer_)
      observer_->OnMessage("removed " + std::to_string(removed.size()) +
                           " container(s) left by a runner that is gone: " + removed.front() +
                           (removed.size() > 1 ? ", …" : ""));
  }
  if (job_.info().has_launcher())
    TRAINCTL_RETURN_IF_ERROR(dir_.WriteHostfile(LocalMpiHostfile(job_)));
  StatusOr<LocalEndpoints> endpoints = LocalEndpoints::Allocate(job_);
  if (!endpoints.ok()) return endpoints.status();
  endpoints_ = std::move(endpoints).value();
  json metadata = job_.metadata.is_object() ? job_.metadata : json::object();
  if (!metadata.contains("creationTimestamp"))
    metadata["creationTimestamp"] = FormatRfc3339(clock_.Now());
  // Unique over time too: the job history keys records by uid.
  if (!metadata.contains("uid"))
    metadata["uid"] = "local-" +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         clock_.Now().time_since_epoch())
                                         .count()) +
                      "-" + std::to_string(getpid());
  job_.metadata = metadata;
  return dir_.WriteJob(api::EncodeJob(job_));
}

StatusOr<GpuAssignment> Run::ChooseGpus() const {
  StatusOr<std::vector<GpuAsk>> asks = GpuAsks(job_);
  if (!asks.ok()) return asks.status();
  if (asks->empty()) return GpuAssignment();
  if (!options_.gpus) return InvalidError("the job asks for GPUs and no inventory was read");
  std::vector<DeviceClaim> held = ReadDeviceClaims(options_.state_root, dir_.key());
  return AssignGpus(job_, *asks, *options_.gpus, held, options_.gpu_share);
}

Status Run::ClaimGpus() {
  if (StatusOr<std::vector<GpuAsk>> asks = GpuAsks(job_); asks.ok() && asks->empty())
    return Status::Ok();
  // Read what the others hold, choose, record: one step under the state folder's device lock.
  StatusOr<DeviceLock> lock = DeviceLock::Acquire(options_.state_root);
  if (!lock.ok()) return lock.status();
  StatusOr<GpuAssignment> chosen = ChooseGpus();
  if (!chosen.ok()) return chosen.status();
  if (chosen->empty()) return Status::Ok();
  TRAINCTL_RETURN_IF_ERROR(dir_.WriteDevices(EncodeAssignment(*chosen)));
  gpus_ = std::move(chosen).value();
  return Status::Ok();
}

void Run::Emit(const engine::Event& event, Time now, const std::string& object) {
  json e = {{"type", event.type},
            {"reason", event.reason},
            {"message", event.message},
            {"object", object.empty() ? std::string(job_.info().name) + "/" + job_.name : object},
            {"time", FormatRfc3339(now)}};
  Report(dir_.AppendEvent(e), "an event");
  if (observer_) observer_->OnEvent(event);
}

void Run::Start(const std::string& type, int index, Time now, size_t resume_step, bool in_place) {
  std::string name = api::ReplicaName(job_, type, index);
  Replica r;
  if (auto it = replicas_.find(name); it != replicas_.end() && !it->second.deleted) return;
  if (auto it = replicas_.find(name); it != replicas_.end()) r.attempt = it->second.attempt;
  r.name = name;
  r.type = type;
  r.index = index;
  r.pod_policy =
      api::PodRestartPolicy(api::ParseRestartPolicy(job_.replica_specs.at(type).restart_policy));
  r.port = endpoints_->Port(type, index, 0);
  ReplicaLaunchInputs inputs = LaunchInputs(options_, dir_, name, &gpus_);
  StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job_, type, index, *endpoints_, inputs);
  if (launch.ok())
    if (Status made = MakeMounts(launch->mounts, launch->spec.cwd); !made.ok()) launch = made;
  StatusOr<InitLaunches> inits =
      BuildInitLaunches(job_, type, index, *endpoints_, inputs, resume_step);
  if (!inits.ok() && launch.ok()) launch = inits.status();
  if (inits.ok()) {
    for (const InitLaunch& init : inits->launches)
      if (Status made = MakeMounts(init.launch.mounts, init.launch.spec.cwd);
          !made.ok() && launch.ok())
        launch = made;
    r.inits = std::move(inits->launches);
    r.init_total = inits->total;
    r.step_base = std::min(resume_step, inits->total);
  }
  replicas_[name] = std::move(r);
  Replica& rep = replicas_[name];
  if (!launch.ok()) {
    rep.phase = Phase::kFailed;
    rep.exit_code = 127;
    rep.finished = now;
    rep.message = launch.status().message();
    Emit({"Warning", "FailedCreatePod", "Error creating: " + rep.message}, now);
    return;
  }
  rep.main = std::move(launch).value();
  rep.command =
      rep.main.container ? ContainerSummary(*rep.main.container) : rep.main.display_command;
  rep.attempt++;
  PlanPulls(rep);
  // The kubelet restarts a container in place: no pod is created (its Started event follows).
  if (!in_place) Emit({"Normal", "SuccessfulCreatePod", "Created pod: " + name}, now);
  SpawnStep(rep, now);
}

void Run::SpawnStep(Replica& rep, Time now) {
  if (!rep.never_pull.empty()) return;  // waits, as a kubelet's pod does (ErrImageNeverPull)
  if (!rep.pulls.empty()) {
    LaunchSpec pull;
    pull.argv = PullArgv(*options_.runtime, rep.pulls.front());
    pull.env = options_.base_env;
    pull.cwd = options_.manifest_dir.empty() ? "/" : options_.manifest_dir;
    pull.log_path = dir_.LogPath(rep.name);
    std::error_code size_error;
    auto size = std::filesystem::file_size(pull.log_path, size_error);
    rep.log_start = size_error ? 0 : static_cast<long long>(size);
    StatusOr<std::unique_ptr<ReplicaProcess>> process = launcher_->Spawn(pull);
    if (!process.ok()) {
      rep.pull_failures++;
      rep.pull_message = process.status().message();
      rep.pull_at = mono_ + RestartBackoff(rep.pull_failures);
      return;
    }
    rep.process = std::move(process).value();
    rep.pulling = true;
    rep.phase = Phase::kPending;
    Emit({"Normal", "Pulling", "Pulling image \"" + rep.pulls.front() + "\""}, now,
         "Pod/" + rep.name);
    return;
  }
  bool init = rep.step < rep.inits.size();
  PreparedLaunch& launch = init ? rep.inits[rep.step].launch : rep.main;
  launch.spec.log_path = dir_.LogPath(rep.name);
  Status joined = Status::Ok();
  if (!init) {
    const std::string ours =
        std::string(kTorchElasticErrorFileEnv) + "=" + dir_.LogPath(rep.name) + ".error.json";
    if (std::find(launch.spec.env.begin(), launch.spec.env.end(), ours) != launch.spec.env.end()) {
      rep.error_file = dir_.LogPath(rep.name) + ".error.json";
      std::remove(rep.error_file.c_str());  // a file from an earlier attempt is not this one's
    }
    joined = JoinCgroup(rep, launch.spec);
    // The log is shared by every run of the replica; its last lines are this run's.
    std::error_code size_error;
    auto size = std::filesystem::file_size(launch.spec.log_path, size_error);
    rep.log_start = size_error ? 0 : static_cast<long long>(size);
  }
  if (launch.container && joined.ok()) PrepareContainer(rep, launch, init);
  StatusOr<std::unique_ptr<ReplicaProcess>> process =
      joined.ok() ? launcher_->Spawn(launch.spec) : joined;
  if (!process.ok()) {
    ReleaseCgroup(rep);
    rep.phase = Phase::kFailed;
    rep.exit_code = 127;
    rep.finished = now;
    rep.message = process.status().message();
    Emit({"Warning", "Failed", rep.message}, now, "Pod/" + rep.name);
    return;
  }
  rep.process = std::move(process).value();
  std::string pid = " (pid " + std::to_string(rep.process->pid()) + ")";
  if (init) {
    rep.phase = Phase::kPending;
    Emit({"Normal", "Started",
          "Started init container " + rep.inits[rep.step].name + ": " +
              Abbreviate(launch.display_command, kEventCommandBytes) + pid},
         now, "Pod/" + rep.name);
    return;
  }
  rep.phase = Phase::kRunning;
  rep.started = now;
  std::string devices;
  for (const auto& [var, value] : GpuEnv(VisibleGpus(job_, gpus_, rep.type, rep.index)))
    devices += (devices.empty() ? " with " : " ") + var + "=" + value;
  Emit({"Normal", "Started",
        "Started " + Abbreviate(rep.command, kEventCommandBytes) + pid + devices},
       now, "Pod/" + rep.name);
}

void Run::PrepareContainer(Replica& r, PreparedLaunch& launch, bool init) {
  const RuntimeHost& host = *options_.runtime;
  ContainerRun& run = *launch.container;
  run.name = ContainerName(job_.namespace_, job_.info().name, r.name, r.attempt,
                           init ? r.inits[r.step].name : "");
  if (!init && !r.cgroup.dirs.empty()) {
    // The limits are on the replica's cgroup, as in process mode; the container goes below it
    // and the runner hears its OOM kills there.
    std::string parent = CgroupParentOf(options_.cgroups, r.cgroup);
    if (!parent.empty()) {
      run.cgroup_parent = parent;
      run.memory_bytes.reset();
      launch.spec.cgroup_procs.clear();
      r.oom_watch = WatchOomEvents(r.cgroup);
    }
  }
  // No container outlives its client: the supervisor removes it once the client has ended
  // (also when the runner was killed), and leaves the runtime's monitor alone meanwhile.
  launch.spec.after_argv = RemoveArgv(host, run.name);
  launch.spec.reap_descendants = false;
  ApplyContainerRun(launch, host, options_.base_env);
}

void Run::PlanPulls(Replica& r) {
  if (!r.main.container) return;
  std::vector<const PreparedLaunch*> launches;
  for (const InitLaunch& init : r.inits) launches.push_back(&init.launch);
  launches.push_back(&r.main);
  for (const PreparedLaunch* launch : launches) {
    const std::string& image = launch->container->image;
    if (std::find(r.pulls.begin(), r.pulls.end(), image) != r.pulls.end()) continue;
    auto known = image_present_.find(image);
    bool present =
        known != image_present_.end()
            ? known->second
            : (image_present_[image] = ImagePresent(*options_.runtime, options_.base_env, image));
    switch (DecidePull(image, launch->pull_policy, present)) {
      case PullAction::kPull:
        r.pulls.push_back(image);
        break;
      case PullAction::kNeverPullMissing:
        r.never_pull = "Container image \"" + image +
                       "\" is not present with pull policy of Never (" +
                       RuntimeName(options_.runtime->kind) + " has no such image)";
        break;
      case PullAction::kNone:
        break;
    }
  }
}

void Run::StartDuePulls(Time now) {
  for (auto& [name, r] : replicas_) {
    if (!r.pull_at || *r.pull_at > mono_ || r.terminating) continue;
    r.pull_at.reset();
    SpawnStep(r, now);
  }
}

void Run::Terminate(Replica& r, Time now) {
  if (r.terminating || r.deleted) return;
  r.terminating = true;
  r.restart_at.reset();
  r.pull_at.reset();
  if (r.process && !r.process->Poll()) {
    r.process->Signal(SIGTERM);
    r.kill_at = mono_ + options_.grace;
    Emit({"Normal", "Killing", "Stopping " + r.name}, now, "Pod/" + r.name);
  } else {
    if (r.process && r.process->GroupAlive()) r.process->Signal(SIGKILL);
    r.deleted = true;
  }
}

void Run::TerminateAll(Time now) {
  for (auto& [name, r] : replicas_)
    if (!r.deleted && (r.process || r.restart_at || r.pull_at || !r.never_pull.empty()))
      Terminate(r, now);
}

bool Run::AnyAlive() const {
  for (const auto& [name, r] : replicas_) {
    if (r.deleted) continue;
    if (r.restart_at || r.pull_at) return true;
    if (r.process && r.process->GroupAlive()) return true;
  }
  return false;
}

void Run::Reap(Time now) {
  for (auto& [name, r] : replicas_) {
    if (!r.process) continue;
    std::optional<int> code = r.process->Poll();
    if (!code) continue;
    // Like a container: when the main process ends, the rest of the group goes too.
    if (r.process->GroupAlive()) r.process->Signal(SIGKILL);
    if (r.terminating) {
      if (r.process->GroupAlive()) continue;
      r.exit_code = code;
      r.finished = now;
      r.process.reset();
      ReleaseCgroup(r);
      r.deleted = true;
      continue;
    }
    if (r.pulling) {
      r.pulling = false;
      r.process.reset();
      std::string image = r.pulls.front();
      if (*code == 0) {
        image_present_[image] = true;
        r.pulls.erase(r.pulls.begin());
        r.pull_failures = 0;
        Emit({"Normal", "Pulled", "Successfully pulled image \"" + image + "\""}, now,
             "Pod/" + name);
        if (!engine::IsFinished(job_.status) && !interrupted_by_) SpawnStep(r, now);
        continue;
      }
      r.pull_failures++;
      TailLog(name, /*flush=*/false);
      r.pull_message = LastLine(ReadLogTail(dir_.LogPath(name), kLastLinesBytes, r.log_start));
      Duration backoff = RestartBackoff(r.pull_failures);
      r.pull_at = mono_ + backoff;
      Emit({"Warning", "Failed",
            "Failed to pull image \"" + image + "\": " + r.pull_message + " (ErrImagePull)"},
           now, "Pod/" + name);
      Emit({"Normal", "BackOff", "Back-off pulling image \"" + image + "\""}, now, "Pod/" + name);
      continue;
    }
    bool init = r.step < r.inits.size();
    if (init && *code == 0 && (engine::IsFinished(job_.status) || interrupted_by_)) {
      r.process.reset();  // the job ended meanwhile: the main container is not started
      r.deleted = true;
      continue;
    }
    if (init && *code == 0) {  // on to the next step, as the kubelet does
      r.process.reset();
      Emit({"Normal", "Completed",
            "init container " + r.inits[r.step].name + " of " + r.name + " exited with code 0"},
           now, "Pod/" + name);
      r.step++;
      SpawnStep(r, now);
      continue;
    }
    r.init_failed = init;
    r.exit_code = code;
    r.finished = now;
    r.exit_seq = ++exits_;
    r.process.reset();
    ReleaseCgroup(r);
    TailLog(name, /*flush=*/false);  // its last lines before the news of its exit
    r.last_lines = ReadLogTail(dir_.LogPath(name), kLastLinesBytes, init ? 0 : r.log_start);
    if (*code != 0 && !init) {
      // torchrun's report of a failed worker fills the last 2 KiB: look past it.
      std::string end = ReadLogTail(dir_.LogPath(name), 8 * kLastLinesBytes, r.log_start);
      if (std::optional<std::string> worker =
              WorkerOutputBeforeTorchrunReport(end, kLastLinesBytes))
        r.last_lines = *worker;
    }
    if (!r.error_file.empty() && *code != 0) {
      std::string error = ReadLogTail(r.error_file, 64 * 1024);
      if (std::optional<std::string> root = TorchElasticErrorText(error, kLastLinesBytes))
        r.last_lines = *root;
    }
    std::string oom = r.oom_killed ? " (OOMKilled; its memory limit is " +
                                         FormatMemory(r.memory_limit.value_or(0)) + ")"
                                   : "";
    std::string who = init ? "init container " + r.inits[r.step].name + " of " + r.name : r.name;
    Emit({*code == 0 ? "Normal" : "Warning", "Exited",
          who + " exited with code " + std::to_string(*code) + oom},
         now, "Pod/" + name);
    ExitDecision exit = DecideExit(r.pod_policy, *code, r.restarts, engine::IsFinished(job_.status),
                                   interrupted_by_ != 0);
    if (exit.restart) {
      r.restarts++;
      r.restart_at = mono_ + exit.backoff;
      r.backoff = exit.backoff;
      Emit({"Warning", "BackOff",
            "Back-off " + std::to_string(exit.backoff.count() / 1000) + "s restarting " + r.name},
           now, "Pod/" + name);
    } else {
      r.phase = exit.phase;
    }
  }
}

void Run::StartDueRestarts(Time now) {
  std::vector<std::pair<std::string, int>> due;
  for (auto& [name, r] : replicas_)
    if (r.restart_at && *r.restart_at <= mono_ && !r.terminating) due.emplace_back(r.type, r.index);
  for (const auto& [type, index] : due) {
    std::string name = api::ReplicaName(job_, type, index);
    int restarts = replicas_[name].restarts;
    // In place, as the kubelet restarts a container: from the init container that failed, or
    // only the main container once every init container has succeeded.
    const Replica& old = replicas_[name];
    size_t resume = old.init_failed ? old.step_base + old.step : std::numeric_limits<size_t>::max();
    Replica::LastEnd last{old.exit_code.value_or(-1), old.finished, EndReason(old),
                          !old.message.empty() ? old.message : old.last_lines};
    replicas_[name].deleted = true;
    Start(type, index, now, resume, /*in_place=*/true);
    replicas_[name].restarts = restarts;
    replicas_[name].last_end = std::move(last);
  }
}

void Run::KillOverdue(Time now) {
  for (auto& [name, r] : replicas_) {
    if (r.terminating && r.kill_at && *r.kill_at <= mono_ && r.process) {
      r.process->Signal(SIGKILL);
      r.kill_at.reset();
      Emit({"Warning", "Killing", r.name + " did not stop within the grace period; killed"}, now,
           "Pod/" + name);
    }
  }
}

std::vector<engine::ReplicaObservation> Run::Observe() const {
  std::vector<engine::ReplicaObservation> out;
  for (const auto& [name, r] : replicas_) {
    if (r.deleted) continue;
    engine::ReplicaObservation o;
    o.name = r.name;
    o.type = r.type;
    o.index = r.index;
    o.phase = r.phase;
    o.exit_code = r.exit_code;
    o.restarts = r.restarts;
    o.terminating = r.terminating;
    o.finished_at = r.finished;
    o.exit_seq = r.exit_seq;
    if (r.exit_code) {
      o.end_reason = EndReason(r);
      o.end_message = !r.message.empty() ? r.message : r.last_lines;
    } else if (r.last_end) {  // runs again after an in-place restart
      o.exit_code = r.last_end->exit_code;
      o.finished_at = r.last_end->finished;
      o.end_reason = r.last_end->reason;
      o.end_message = r.last_end->output;
    }
    if (r.phase == Phase::kRunning && !r.restart_at) o.started_at = r.started;
    if (r.restart_at && !r.terminating) {
      // As the kubelet's container state: waiting for the back-off (a stable text, no
      // countdown, so the job's status is not rewritten while it waits).
      o.waiting_reason = "CrashLoopBackOff";
      o.waiting_message =
          "back-off " + std::to_string(r.backoff.count() / 1000) + " s before restarting " + r.name;
    }
    if (r.process && r.step < r.inits.size()) {
      o.waiting_reason = "PodInitializing";
      o.waiting_message = "init container " + r.inits[r.step].name + " is running";
    }
    if (!r.pulls.empty() && (r.pulling || r.pull_at)) {
      bool failed = r.pull_failures > 0;
      o.waiting_reason = failed ? "ImagePullBackOff" : "ContainerCreating";
      o.waiting_message =
          failed ? "Back-off pulling image \"" + r.pulls.front() + "\": " + r.pull_message
                 : "pulling image \"" + r.pulls.front() + "\"";
    }
    if (!r.never_pull.empty()) {
      o.waiting_reason = "ErrImageNeverPull";
      o.waiting_message = r.never_pull;
    }
    if (r.process) o.last_output = r.last_output ? r.last_output : r.started;
    out.push_back(o);
  }
  return out;
}

void Run::ApplyPlan(const engine::Plan& plan, Time now) {
  for (const engine::Event& e : plan.events)
    // The TTL deletes the job once; the runner goes on reconciling while its replicas stop.
    if (!(delete_job_ && e.reason == engine::kDeletedJobReason)) Emit(e, now);
  if (plan.status_changed) {
    bool conditions_changed = plan.status.conditions != job_.status.conditions;
    job_.status = plan.status;
    Report(dir_.WriteJob(api::EncodeJob(job_)), "the job's status");
    if (conditions_changed && observer_) observer_->OnConditions(job_.status);
  }
  for (const engine::ReplicaRef& ref : plan.remove) {
    auto it = replicas_.find(ref.name);
    if (it != replicas_.end()) Terminate(it->second, now);
  }
  for (const engine::ReplicaRef& ref : plan.create) Start(ref.type, ref.index, now);
  if (plan.delete_job) delete_job_ = true;
}

json Run::ReplicasJson() const {
  json out = json::array();
  for (const auto& [name, r] : replicas_) {
    std::string state = engine::PhaseName(r.phase);
    if (r.deleted)
      state = "Stopped";
    else if (r.terminating)
      state = "Stopping";
    else if (r.restart_at)
      state = "Restarting";
    json j = {{"name", r.name},       {"type", r.type},
              {"index", r.index},     {"phase", engine::PhaseName(r.phase)},
              {"state", state},       {"restarts", r.restarts},
              {"attempt", r.attempt}, {"port", r.port},
              {"command", r.command}};
    json labels = {{api::kLabelJobName, job_.name},
                   {api::kLabelReplicaType, api::ToLower(r.type)},
                   {api::kLabelReplicaIndex, std::to_string(r.index)}};
    if (api::PluginFor(job_.kind).IsMasterRole(job_, r.type, r.index))
      labels[api::kLabelJobRole] = "master";
    j["labels"] = std::move(labels);
    if (r.exit_code) j["exitCode"] = *r.exit_code;
    if (!r.exit_code && r.last_end) {  // runs again after an in-place restart: how it ended
      j["lastExitCode"] = r.last_end->exit_code;
      if (r.last_end->finished) j["lastFinishTime"] = FormatRfc3339(*r.last_end->finished);
    }
    if (r.oom_killed) j["reason"] = "OOMKilled";
    if (r.init_failed) j["reason"] = "Init:Error";
    if (r.process && r.step < r.inits.size())
      j["initContainer"] = r.inits[r.step].name + " (" + std::to_string(r.step_base + r.step + 1) +
                           "/" + std::to_string(r.init_total) + ")";
    if (r.exit_seq) j["exitSeq"] = r.exit_seq;
    if (r.process) j["pid"] = r.process->pid();
    if (r.started) j["startTime"] = FormatRfc3339(*r.started);
    if (r.finished) j["finishTime"] = FormatRfc3339(*r.finished);
    if (!r.message.empty()) j["message"] = r.message;
    if (std::vector<Gpu> seen = VisibleGpus(job_, gpus_, r.type, r.index); !seen.empty()) {
      json gpus = json::array();
      for (const Gpu& g : seen)
        gpus.push_back({{"resource", g.resource}, {"index", g.index}, {"id", g.id}});
      j["gpus"] = std::move(gpus);
    }
    out.push_back(std::move(j));
  }
  return out;
}

void Run::Persist(bool force) {
  json replicas = ReplicasJson();
  if (!force && replicas == last_replicas_json_) return;
  last_replicas_json_ = replicas;
  Report(dir_.WriteReplicas(replicas), "the replicas' state");
  if (observer_) observer_->OnReplicas(replicas);
}

void Run::TailLog(const std::string& name, bool flush) {
  std::string short_name = name.substr(job_.name.size() + 1);
  bool metrics = name == metrics_replica_ && metric_records_ <= metrics::kMaxRecordsPerJob;
  std::vector<json> records;
  size_t gained = tailer_.Poll(
      name, dir_.LogPath(name),
      [&](const std::string& line) {
        if (observer_) observer_->OnLogLine(short_name, line);
        if (metrics)
          for (std::string_view piece : metrics::SplitOutputLines(line))
            if (std::optional<metrics::MetricLine> parsed = metrics::ParseMetricLine(piece))
              records.push_back(metrics::MetricRecord(*parsed, now_));
      },
      flush);
  if (!records.empty()) {
    if (metric_records_ + records.size() > metrics::kMaxRecordsPerJob) {
      records.resize(metrics::kMaxRecordsPerJob -
                     std::min(metric_records_, metrics::kMaxRecordsPerJob));
      records.push_back({{"truncated", true}});
    }
    metric_records_ += records.size();
    Report(dir_.AppendMetricRecords(records), "the metric records");
  }
  if (gained > 0)
    if (auto it = replicas_.find(name); it != replicas_.end()) it->second.last_output = now_;
}

void Run::TailLogs(bool flush) {
  for (const auto& [name, r] : replicas_) TailLog(name, flush);
}

int Run::WaitTimeoutMs(Time now, const std::optional<Duration>& requeue) const {
  Duration wait(250);
  auto consider = [&](Duration d) {
    if (d < Duration::zero()) d = Duration::zero();
    if (d < wait) wait = d;
  };
  if (requeue) consider(*requeue + Duration(5));
  for (const auto& [name, r] : replicas_) {
    if (r.restart_at) consider(std::chrono::duration_cast<Duration>(*r.restart_at - mono_));
    if (r.pull_at) consider(std::chrono::duration_cast<Duration>(*r.pull_at - mono_));
    if (r.kill_at) consider(std::chrono::duration_cast<Duration>(*r.kill_at - mono_));
  }
  return static_cast<int>(wait.count());
}

void Run::WaitForActivity(int timeout_ms) {
  std::vector<ReplicaProcess*> running;
  for (const auto& [name, r] : replicas_)
    if (r.process) running.push_back(r.process.get());
  launcher_->WaitForActivity(running, g_wake_pipe[0], Duration(timeout_ms));
  if (g_wake_pipe[0] >= 0) {
    char buf[16];
    while (read(g_wake_pipe[0], buf, sizeof(buf)) > 0) {
    }
  }
}

StatusOr<RunResult> Run::Execute() {
  Status setup = Setup();
  if (options_.on_setup) options_.on_setup(setup, dir_);
  TRAINCTL_RETURN_IF_ERROR(setup);
  SignalScope signals;
  for (;;) {
    Time now = clock_.Now();
    now_ = now;
    mono_ = clock_.Monotonic();
    Reap(now);
    int signal_count = g_signal_count.load();
    if (signal_count > signals_handled_) {
      signals_handled_ = signal_count;
      if (!interrupted_by_) {
        interrupted_by_ = g_last_signal.load();
        std::string sig = interrupted_by_ == SIGINT ? "SIGINT" : "SIGTERM";
        if (observer_) observer_->OnMessage("received " + sig + ": stopping every replica");
        if (!engine::IsFinished(job_.status)) {
          std::string message = std::string(job_.info().name) + " " + job_.name +
                                " was stopped by " + sig + " before it finished.";
          job_.status = engine::FailedStatus(job_, message, now);
          Emit({"Warning", std::string(job_.info().name) + "Failed", message}, now);
          Report(dir_.WriteJob(api::EncodeJob(job_)), "the job's status");
          if (observer_) observer_->OnConditions(job_.status);
        }
        TerminateAll(now);
      } else {
        for (auto& [name, r] : replicas_)
          if (r.process) r.process->Signal(SIGKILL);
      }
    }
    StartDueRestarts(now);
    StartDuePulls(now);
    KillOverdue(now);
    std::optional<Duration> requeue;
    if (!interrupted_by_) {
      engine::Plan plan = engine::Reconcile(job_, Observe(), now);
      ApplyPlan(plan, now);
      requeue = plan.requeue_after;
    }
    FinishDecision finish = DecideFinish(
        engine::IsFinished(job_.status), engine::HasCondition(job_.status, engine::kSucceeded),
        interrupted_by_ != 0, drain_started_, mono_, options_.drain);
    drain_started_ = finish.drain_started;
    if (finish.stop_idle) {
      // Idle replicas (MPIJob Workers) only stand in for containers: no drain for them.
      for (auto& [name, r] : replicas_)
        if (IsIdleReplica(job_, r.type) && !r.deleted && r.process) Terminate(r, now);
    }
    if (finish.stop_all) TerminateAll(now);
    TailLogs(false);
    Persist(false);
    if (observer_) observer_->OnTick(job_, last_replicas_json_, now);
    if (engine::IsFinished(job_.status) && !AnyAlive()) break;
    WaitForActivity(WaitTimeoutMs(now, requeue));
  }
  Time now = clock_.Now();
  now_ = now;
  mono_ = clock_.Monotonic();
  Reap(now);
  for (auto& [name, r] : replicas_) {
    if (r.terminating) r.deleted = true;
  }
  TailLogs(true);
  // One last pass so TTL and the final counts are applied to the stored object.
  if (!interrupted_by_) ApplyPlan(engine::Reconcile(job_, Observe(), now), now);
  Report(dir_.WriteJob(api::EncodeJob(job_)), "the job's status");
  Persist(true);
  RunResult result;
  result.job = api::EncodeJob(job_);
  result.succeeded = engine::HasCondition(job_.status, engine::kSucceeded);
  result.interrupted_by = interrupted_by_;
  if (!cgroup_job_.empty()) {
    Report(RemoveCgroupDirs(JobCgroupDirs(options_.cgroups, cgroup_job_)),
           "(removing) the job's cgroup");
    RemoveOtherJobCgroups(options_.cgroups, cgroup_job_);
  }
  cgroup_job_.clear();
  if (options_.runtime)  // each container's supervisor removed it; this catches the rest
    RemoveLeftoverContainers(
        *options_.runtime, options_.base_env,
        api::ToLower(job_.info().name) + "/" + job_.namespace_ + "/" + job_.name);
  if (options_.on_finished) options_.on_finished(dir_);
  dir_.ReleaseRunnerLock();
  if (delete_job_) Report(dir_.RemoveAll(), "(removing) the finished job's folder");
  return result;
}

}  // namespace

ReplicaLaunchInputs LaunchInputs(const RunOptions& options, const JobDir& dir,
                                 const std::string& replica, const GpuAssignment* gpus) {
  ReplicaLaunchInputs inputs;
  inputs.manifest_dir = options.manifest_dir;
  inputs.base_env = options.base_env;
  inputs.hostfile_path = dir.HostfilePath();
  inputs.gpus = gpus;
  // torchrun (or a script with torch's @record) writes its root cause here, unless the user
  // points it elsewhere.
  if (!replica.empty() && !options.runtime)
    inputs.error_file = dir.LogPath(replica) + ".error.json";
  inputs.runtime = options.runtime ? &*options.runtime : nullptr;
  inputs.job_folder = dir.path();
  inputs.config = &options.config;
  return inputs;
}

Status PreflightCheck(const api::Job& job, const RunOptions& options) {
  if (!api::ManagedByUs(job.run_policy.managed_by))
    return InvalidError("spec.runPolicy.managedBy: \"" + *job.run_policy.managed_by +
                        "\": this job is managed by another controller; trainctl run only runs "
                        "jobs managed by " +
                        api::kManagedByKubeflow);
  if (job.run_policy.suspend.value_or(false))
    return InvalidError(
        "spec.runPolicy.suspend: true: a suspended job would never start "
        "locally; remove suspend or set it to false");
  if (job.TotalReplicas() > kMaxLocalReplicas) {
    std::string largest;
    int most = -1;
    for (const auto& [type, spec] : job.replica_specs)
      if (spec.replicas.value_or(1) > most) {
        most = spec.replicas.value_or(1);
        largest = type;
      }
    return InvalidError(api::ReplicaSpecPath(job, largest) + ".replicas: " + std::to_string(most) +
                        ": the job has " + std::to_string(job.TotalReplicas()) +
                        " replicas; trainctl run starts a process group for each and takes at "
                        "most " +
                        std::to_string(kMaxLocalReplicas) + " in one job");
  }
  StatusOr<std::vector<GpuAsk>> asks = GpuAsks(job);
  if (!asks.ok()) return asks.status();
  if (!asks->empty()) {
    if (!options.gpus)
      return InvalidError(asks->front().field +
                          ": the job asks for GPUs and no inventory of "
                          "this machine's GPUs was read");
    StatusOr<GpuAssignment> fits = AssignGpus(job, *asks, *options.gpus, {}, options.gpu_share);
    if (!fits.ok()) return fits.status();
  }
  api::ServiceEndpoints placeholder(job.name, job.namespace_);
  JobDir dir(options.state_root, {job.kind, job.namespace_, job.name});
  ReplicaLaunchInputs inputs = LaunchInputs(options, dir, "", nullptr);
  for (const auto& [type, spec] : job.replica_specs) {
    if (spec.replicas.value_or(1) == 0) continue;
    StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, type, 0, placeholder, inputs);
    if (!launch.ok()) return launch.status();
    if (StatusOr<InitLaunches> inits = BuildInitLaunches(job, type, 0, placeholder, inputs);
        !inits.ok())
      return inits.status();
  }
  return Status::Ok();
}

StatusOr<RunResult> RunJob(api::Job job, const RunOptions& options, const Clock& clock,
                           RunObserver* observer) {
  TRAINCTL_RETURN_IF_ERROR(PreflightCheck(job, options));
  std::string name = std::string(job.info().name) + " " + job.namespace_ + "/" + job.name;
  Run run(std::move(job), options, clock, observer);
  try {
    return run.Execute();
  } catch (const std::exception& e) {
    // No exception leaves the module; `run` going out of scope kills every replica's group.
    return InternalError("unexpected error while running " + name + ": " + e.what() +
                         "; every replica was stopped");
  }
}

}  // namespace trainctl::local
