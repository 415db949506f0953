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

#include "api/checkpoint_notice.h"
#include "api/kind_plugin.h"
#include "api/metrics_policy.h"
#include "api/restart_policy.h"
#include "api/restart_scope.h"
#include "api/validation.h"
#include "common/ssh_keys.h"
#include "common/text.h"
#include "engine/checkpoint_notice.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "local/cgroups.h"
#include "local/device_claims.h"
#include "local/endpoints.h"
#include "local/kubelet.h"
#include "local/launch.h"
#include "local/launcher.h"
#include "local/local_pod.h"
#include "local/log_tailer.h"
#include "local/mpi_local.h"
#include "local/notice_files.h"
#include "local/replica_launch.h"
#include "local/replica_limits.h"
#include "local/runtime_probe.h"
#include "local/status_server.h"
#include "local/torch_error.h"
#include "metrics/series.h"

namespace trainctl::local {
namespace {

using engine::Phase;

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
    ctx_.job = &job_;
    ctx_.options = &options_;
    ctx_.launcher = launcher_;
    ctx_.dir = &dir_;
    ctx_.gpus = &gpus_;
    ctx_.now = &now_;
    ctx_.mono = &mono_;
    ctx_.interrupted_by = &interrupted_by_;
    ctx_.emit = [this](const engine::Event& e, Time t, const std::string& object) {
      Emit(e, t, object);
    };
    ctx_.report = [this](const Status& written, const char* what) { Report(written, what); };
    ctx_.tail_log = [this](const std::string& replica, bool flush) { TailLog(replica, flush); };
  }

  ~Run();
  StatusOr<RunResult> Execute();

 private:
  Status Setup();
  // The job's GPUs among those no other running job holds (none asked: empty).
  StatusOr<GpuAssignment> ChooseGpus() const;
  // ChooseGpus and records the choice, under the state folder's device lock.
  Status ClaimGpus();
  void Reap(Time now);
  void StartDueRestarts(Time now);
  void StartDuePulls(Time now);
  void KillOverdue(Time now);
  void ApplyPlan(const engine::Plan& plan, Time now);
  // Starts replica (type, index): its init containers from `resume_step` on (the one that
  // failed, when the kubelet would restart it in place), then its main container. A new
  // replica is a pod creation; `in_place` (a restart after a back-off) is not.
  void Start(const std::string& type, int index, Time now, size_t resume_step = 0,
             bool in_place = false);
  void TerminateAll(Time now);
  // Tells a replica `notice` ("" : takes it back): its notice file, then the job's checkpoint
  // signal (if any) to its process group.
  void TellNotice(LocalPod& pod, const std::string& notice);
  // Reads which told replicas reported done (their done file).
  void ReadNoticeReports();
  // On an interrupt: tells every replica alive that it stops for `reason` at now + the notice's
  // seconds; false when the job has no notice policy or nothing is alive.
  bool NoticeBeforeInterrupt(Time now);
  bool AllNoticesDone() const;
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
  int endpoints_attempt_ = 0;  // the job's attempt endpoints_ was allocated for
  std::map<std::string, LocalPod> replicas_;
  PodContext ctx_;  // what the pods share: the run's state, its events and its log tailing
  LogTailer tailer_;
  json last_replicas_json_;
  int interrupted_by_ = 0;
  int signals_handled_ = 0;
  std::optional<MonoTime> drain_started_;
  // After an interrupt with a checkpoint notice: when the replicas are stopped at the latest.
  std::optional<MonoTime> interrupt_stop_at_;
  MonoTime mono_{};  // the monotonic time of this pass, read with `now`
  Time now_{};       // the wall time of this pass
  bool delete_job_ = false;
  std::string last_write_error_;
  GpuAssignment gpus_;  // replica name → its devices
  // The replica whose output becomes metric series ("" when metrics are off), and how many
  // records were written (recording stops at metrics::kMaxRecordsPerJob).
  std::string metrics_replica_;
  size_t metric_records_ = 0;
  std::unique_ptr<LocalStatusServer> status_server_;  // null: not served
};

void Run::Report(const Status& written, const char* what) {
  if (written.ok() || written.message() == last_write_error_) return;
  last_write_error_ = written.message();
  if (observer_)
    observer_->OnMessage(std::string("warning: could not write ") + what + " to " + dir_.path() +
                         ": " + written.message());
}

Run::~Run() {
  if (ctx_.cgroup_job.empty()) return;
  std::vector<std::string> dirs;
  for (const auto& [name, r] : replicas_)
    dirs.insert(dirs.end(), r.cgroup.remove_dirs.begin(), r.cgroup.remove_dirs.end());
  replicas_.clear();  // kills and reaps whatever is left, so the cgroups can go
  for (const std::string& dir : JobCgroupDirs(options_.cgroups, ctx_.cgroup_job))
    dirs.push_back(dir);
  RemoveCgroupDirs(dirs).IgnoreError();
  RemoveOtherJobCgroups(options_.cgroups, ctx_.cgroup_job);
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
    ctx_.cgroup_job = JobCgroupName();
  }
  if (options_.runtime) {
    TRAINCTL_RETURN_IF_ERROR(dir_.WriteRuntime(RuntimeName(options_.runtime->kind)));
    std::vector<std::string> removed =
        RemoveLeftoverContainers(*options_.runtime, options_.base_env);
    if (!removed.empty() && observer_)
      observer_->OnMessage("removed " + std::to_string(removed.size()) +
                           " container(s) left by a runner that is gone: " + removed.front() +
                           (removed.size() > 1 ? ", …" : ""));
  }
  if (options_.serve_trainer_status) {
    StatusOr<std::unique_ptr<LocalStatusServer>> served = LocalStatusServer::Start(dir_, &clock_);
    if (served.ok())
      status_server_ = std::move(served).value();
    else if (observer_)
      observer_->OnMessage("warning: progress reports are not served for this run: " +
                           served.status().message());
  }
  LocalMpiMode mpi = LocalMpiModeOf(job_, options_.runtime.has_value());
  if (mpi != LocalMpiMode::kNone)
    TRAINCTL_RETURN_IF_ERROR(dir_.WriteHostfile(LocalMpiHostfile(job_, mpi)));
  StatusOr<LocalEndpoints> endpoints = LocalEndpoints::Allocate(job_);
  if (!endpoints.ok()) return endpoints.status();
  endpoints_ = std::move(endpoints).value();
  if (mpi == LocalMpiMode::kSsh) {
    // A key pair of this run's own, as the operator makes the job's Secret.
    StatusOr<SshKeyPair> keys = GenerateSshKeyPair();
    if (!keys.ok()) return keys.status();
    std::vector<int> ports;
    const std::string workers = job_.MpiWorkerGroup();
    for (int i = 0; i < job_.ReplicasOf(workers); ++i)
      ports.push_back(endpoints_->Port(workers, i, 22));
    TRAINCTL_RETURN_IF_ERROR(
        dir_.WriteSshFolder(keys->private_pem, keys->authorized_key, LocalSshConfig(job_, ports)));
  }
  endpoints_attempt_ = api::RestartAttemptOf(job_);
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
  LocalPod r;
  if (auto it = replicas_.find(name); it != replicas_.end() && !it->second.deleted) return;
  if (auto it = replicas_.find(name); it != replicas_.end()) r.attempt = it->second.attempt;
  r.name = name;
  r.type = type;
  r.index = index;
  r.pod_policy = api::PodRestartPolicyOf(job_, type);
  r.job_attempt = api::RestartAttemptOf(job_);
  if (r.job_attempt != endpoints_attempt_) {
    // A gang restart: every replica of the earlier attempt is gone (the engine waits for
    // that), and the new one rendezvouses on fresh ports, never on a port a dead rank may
    // still hold (issue #38: torchrun's own restarts did not recover on the old one).
    StatusOr<LocalEndpoints> fresh = LocalEndpoints::Allocate(job_);
    if (fresh.ok()) {
      endpoints_ = std::move(fresh).value();
      endpoints_attempt_ = r.job_attempt;
    }
  }
  r.port = endpoints_->Port(type, index, 0);
  ReplicaLaunchInputs inputs = LaunchInputs(options_, dir_, name, &gpus_);
  if (status_server_ && (job_.kind != api::Kind::kTrainJob || type == job_.trainer_group)) {
    inputs.status_env = status_server_->Env();
    inputs.status_folder = status_server_->folder();
  }
  if (api::NoticePolicyOf(job_)) {
    inputs.notice_folder = dir_.path() + "/notice/" + name;
    // A new pod was told nothing yet; an in-place restart keeps what its pod was told.
    if (!in_place) Report(PrepareNoticeFolder(inputs.notice_folder), "the notice folder");
  }
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
  r.notice_folder = inputs.notice_folder;
  replicas_[name] = std::move(r);
  LocalPod& rep = replicas_[name];
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
  rep.PlanPulls(ctx_);
  // The kubelet restarts a container in place: no pod is created (its Started event follows).
  if (!in_place) Emit({"Normal", "SuccessfulCreatePod", "Created pod: " + name}, now);
  rep.SpawnStep(ctx_);
}

void Run::StartDuePulls(Time now) {
  for (auto& [name, r] : replicas_) r.PullIfDue(ctx_);
}

void Run::TerminateAll(Time now) {
  for (auto& [name, r] : replicas_)
    if (!r.deleted && (r.process || r.restart_at || r.pull_at || !r.never_pull.empty()))
      r.Terminate(ctx_);
}

void Run::TellNotice(LocalPod& pod, const std::string& notice) {
  if (pod.notice_folder.empty()) return;
  Status written = WriteNotice(pod.notice_folder, notice);
  Report(written, "a replica's checkpoint notice");
  if (!written.ok()) return;
  pod.notice = notice;
  pod.notice_done = false;
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(job_);
  if (!notice.empty() && policy && policy->signal != 0 && pod.process &&
      pod.phase == Phase::kRunning)
    pod.process->Signal(policy->signal);
}

void Run::ReadNoticeReports() {
  for (auto& [name, r] : replicas_)
    r.notice_done = !r.notice.empty() && NoticeDoneReported(r.notice_folder);
}

bool Run::NoticeBeforeInterrupt(Time now) {
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(job_);
  if (!policy) return false;
  api::Notice notice{api::kNoticeForDelete, now + std::chrono::seconds(policy->seconds),
                     api::RestartAttemptOf(job_), policy->seconds};
  std::string text = api::EncodeNotice(notice);
  bool told = false;
  for (auto& [name, r] : replicas_)
    if (!r.deleted && !r.terminating && r.process && r.phase == Phase::kRunning) {
      TellNotice(r, text);
      told = true;
    }
  if (!told) return false;
  // Recorded on the job as the engine's notices are (describe shows it).
  if (!job_.metadata.contains("annotations") || !job_.metadata["annotations"].is_object())
    job_.metadata["annotations"] = json::object();
  job_.metadata["annotations"][api::kNoticeAnnotation] = text;
  Report(dir_.WriteJob(api::EncodeJob(job_)), "the job's checkpoint notice");
  Emit({"Normal", engine::kCheckpointNoticeReason,
        "every replica of " + std::string(job_.info().name) + " " + job_.name + " stops at " +
            FormatRfc3339(notice.stop_at) +
            " because the run was interrupted; each was told to checkpoint (a notice of " +
            std::to_string(policy->seconds) +
            " s in its TRAINCTL_NOTICE_FILE), and the stop comes sooner once every one "
            "reports done."},
       now);
  interrupt_stop_at_ = mono_ + std::chrono::seconds(policy->seconds);
  return true;
}

bool Run::AllNoticesDone() const {
  for (const auto& [name, r] : replicas_)
    if (!r.deleted && !r.terminating && r.process && r.phase == Phase::kRunning && !r.notice_done)
      return false;
  return true;
}

bool Run::AnyAlive() const {
  for (const auto& [name, r] : replicas_)
    if (r.Alive()) return true;
  return false;
}

void Run::Reap(Time now) {
  for (auto& [name, r] : replicas_) r.Reap(ctx_);
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
    const LocalPod& old = replicas_[name];
    size_t resume = old.init_failed ? old.step_base + old.step : std::numeric_limits<size_t>::max();
    LocalPod::LastEnd last{old.exit_code.value_or(-1), old.finished, old.EndReason(),
                           !old.message.empty() ? old.message : old.last_lines};
    replicas_[name].deleted = true;
    std::string notice = old.notice;
    Start(type, index, now, resume, /*in_place=*/true);
    replicas_[name].restarts = restarts;
    replicas_[name].notice = std::move(notice);
    replicas_[name].last_end = std::move(last);
  }
}

void Run::KillOverdue(Time now) {
  for (auto& [name, r] : replicas_) r.KillIfOverdue(ctx_);
}

std::vector<engine::ReplicaObservation> Run::Observe() const {
  std::vector<engine::ReplicaObservation> out;
  for (const auto& [name, r] : replicas_)
    if (!r.deleted) out.push_back(r.Observe());
  return out;
}

void Run::ApplyPlan(const engine::Plan& plan, Time now) {
  if (plan.restart_attempt || plan.notice_record) {
    // A gang restart's next attempt and a checkpoint notice are recorded on the job before any
    // replica is told or stopped.
    if (!job_.metadata.contains("annotations") || !job_.metadata["annotations"].is_object())
      job_.metadata["annotations"] = json::object();
    json& annotations = job_.metadata["annotations"];
    if (plan.restart_attempt)
      annotations[api::kRestartAttemptAnnotation] = std::to_string(*plan.restart_attempt);
    if (plan.notice_record && plan.notice_record->empty())
      annotations.erase(api::kNoticeAnnotation);
    if (plan.notice_record && !plan.notice_record->empty())
      annotations[api::kNoticeAnnotation] = *plan.notice_record;
    if (!plan.status_changed) Report(dir_.WriteJob(api::EncodeJob(job_)), "the job's annotations");
  }
  for (const engine::ReplicaRef& ref : plan.notify)
    if (auto it = replicas_.find(ref.name); it != replicas_.end())
      TellNotice(it->second, api::RecordedNoticeText(job_));
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
    if (it != replicas_.end()) it->second.Terminate(ctx_);
  }
  // A launcher held for its workers (WaitForWorkersReady) is not in the plan until they run.
  for (const engine::ReplicaRef& ref : plan.create) Start(ref.type, ref.index, now);
  if (plan.delete_job) delete_job_ = true;
}

json Run::ReplicasJson() const {
  json out = json::array();
  for (const auto& [name, r] : replicas_) out.push_back(r.ToJson(job_, gpus_));
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
  auto replica = replicas_.find(name);
  size_t gained = tailer_.Poll(
      name, dir_.LogPath(name),
      [&](const std::string& line) {
        if (observer_) observer_->OnLogLine(short_name, line);
        if (replica != replicas_.end()) replica->second.ReadOutputLine(line, now_);
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
  if (gained > 0 && replica != replicas_.end()) replica->second.last_output = now_;
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
  for (const auto& [name, r] : replicas_)
    if (std::optional<MonoTime> due = r.NextDeadline())
      consider(std::chrono::duration_cast<Duration>(*due - mono_));
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
        if (!NoticeBeforeInterrupt(now)) TerminateAll(now);
      } else {
        interrupt_stop_at_.reset();
        for (auto& [name, r] : replicas_)
          if (r.process) r.process->Signal(SIGKILL);
      }
    }
    ReadNoticeReports();
    if (interrupt_stop_at_ && (mono_ >= *interrupt_stop_at_ || AllNoticesDone())) {
      interrupt_stop_at_.reset();
      TerminateAll(now);
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
      // MPIJob Workers only serve the launcher (idle, or sshd in a container): no drain.
      for (auto& [name, r] : replicas_)
        if (ServesLauncherOnly(job_, r.type) && !r.deleted && r.process) r.Terminate(ctx_);
    }
    if (finish.stop_all && !interrupt_stop_at_) TerminateAll(now);
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
  if (!ctx_.cgroup_job.empty()) {
    Report(RemoveCgroupDirs(JobCgroupDirs(options_.cgroups, ctx_.cgroup_job)),
           "(removing) the job's cgroup");
    RemoveOtherJobCgroups(options_.cgroups, ctx_.cgroup_job);
  }
  ctx_.cgroup_job.clear();
  if (options_.runtime)  // each container's supervisor removed it; this catches the rest
    RemoveLeftoverContainers(*options_.runtime, options_.base_env,
                             ContainerJobLabel(job_.kind, job_.namespace_, job_.name));
  Report(dir_.RemoveSshFolder(), "(removing) the job's SSH keys");
  if (status_server_) status_server_->Stop();  // the last report written before the record
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
  inputs.ssh_folder = dir.SshFolderPath();
  inputs.gpus = gpus;
  // torchrun (or a script with torch's @record) writes its root cause here, unless the user
  // points it elsewhere.
  // In a container: a folder of its own, mounted at the same path (the log folder is not).
  if (!replica.empty())
    inputs.error_file = options.runtime ? dir.path() + "/errors/" + replica + "/error.json"
                                        : dir.LogPath(replica) + ".error.json";
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
