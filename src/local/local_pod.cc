#include "local/local_pod.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "api/kind_plugin.h"
#include "api/restart_scope.h"
#include "api/torchrun_report.h"
#include "common/text.h"
#include "engine/conditions.h"
#include "local/cgroups.h"
#include "local/container_runtime.h"
#include "local/kubelet.h"
#include "local/launch.h"
#include "local/log_tailer.h"
#include "local/replica_limits.h"
#include "local/runner.h"
#include "local/runtime_probe.h"
#include "local/torch_error.h"

namespace trainctl::local {
namespace {

using engine::Phase;
using nlohmann::json;

// How much of a replica's log end is kept as its last output (the engine bounds what reaches
// the status again).
constexpr size_t kLastLinesBytes = 2048;

// The value of NAME in a "NAME=value" list ("" when unset).
std::string_view EnvValue(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env)
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name))
      return std::string_view(entry).substr(name.size() + 1);
  return {};
}
// A Started event shows this much of the command (describe's replica table and -o json, the
// whole): train()'s JSON arguments run to kilobytes.
constexpr size_t kEventCommandBytes = 240;

// The last line of `text` that is not blank (a runtime's pull prints its error last).
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  size_t from = start == std::string::npos ? 0 : start + 1;
  return text.substr(from, end + 1 - from);
}

long long FileSize(const std::string& path) {
  std::error_code error;
  auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<long long>(size);
}

bool JobFinished(const PodContext& ctx) { return engine::IsFinished(ctx.job->status); }

}  // namespace

std::string LocalPod::EndReason() const {
  if (!exit_code) return "";
  return !message.empty()  ? "StartError"
         : init_failed     ? "Init:Error"
         : oom_killed      ? "OOMKilled"
         : *exit_code == 0 ? "Completed"
                           : "Error";
}

Status LocalPod::JoinCgroup(PodContext& ctx, LaunchSpec& spec) {
  const api::Job& job = *ctx.job;
  if (ctx.cgroup_job.empty() || !job.MpiLauncherGroup().empty()) return Status::Ok();
  // A runtime that cannot take the replica's cgroup as the container's parent enforces the
  // limits itself (--memory, --cpus).
  if (main.container && !ctx.options->runtime->cgroup_parent) return Status::Ok();
  StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
  if (!limits.ok()) return limits.status();
  if (limits->memory_is_limit) memory_limit = limits->memory_bytes;
  cgroup = PlanReplicaCgroup(ctx.options->cgroups, ctx.cgroup_job,
                             name + "." + std::to_string(attempt), *limits);
  if (cgroup.dirs.empty()) return Status::Ok();
  std::vector<std::string> skipped;
  TRAINCTL_RETURN_IF_ERROR(MakeReplicaCgroup(cgroup, &skipped));
  for (const std::string& why : skipped)
    ctx.emit({"Warning", "LimitNotEnforced", name + ": " + why}, *ctx.now, "Pod/" + name);
  spec.cgroup_procs = cgroup.procs;
  return Status::Ok();
}

void LocalPod::ReleaseCgroup(PodContext& ctx) {
  int64_t below = TakeOomEvents(oom_watch);  // a container's kills happen in its own cgroup
  oom_watch = -1;
  if (cgroup.dirs.empty()) return;
  // A kill in the cgroup while the replica still exited 0 was a helper's, not the replica's end.
  oom_killed = (ReadOomKills(cgroup) > 0 || below > 0) && exit_code && *exit_code != 0;
  ctx.report(RemoveCgroupDirs(cgroup.remove_dirs), "(removing) a replica's cgroup");
  cgroup = CgroupPlan();
}

void LocalPod::SpawnStep(PodContext& ctx) {
  const Time now = *ctx.now;
  if (!never_pull.empty()) return;  // waits, as a kubelet's pod does (ErrImageNeverPull)
  if (!pulls.empty()) {
    LaunchSpec pull;
    pull.argv = PullArgv(*ctx.options->runtime, pulls.front());
    pull.env = ctx.options->base_env;
    pull.cwd = ctx.options->manifest_dir.empty() ? "/" : ctx.options->manifest_dir;
    pull.log_path = ctx.dir->LogPath(name);
    log_start = FileSize(pull.log_path);
    StatusOr<std::unique_ptr<ReplicaProcess>> started_pull = ctx.launcher->Spawn(pull);
    if (!started_pull.ok()) {
      pull_failures++;
      pull_message = started_pull.status().message();
      pull_at = *ctx.mono + RestartBackoff(pull_failures);
      return;
    }
    process = std::move(started_pull).value();
    pulling = true;
    phase = Phase::kPending;
    ctx.emit({"Normal", "Pulling", "Pulling image \"" + pulls.front() + "\""}, now, "Pod/" + name);
    return;
  }
  bool init = step < inits.size();
  PreparedLaunch& launch = init ? inits[step].launch : main;
  launch.spec.log_path = ctx.dir->LogPath(name);
  Status joined = Status::Ok();
  if (!init) {
    error_file = launch.error_file;
    if (!error_file.empty()) {
      std::error_code made;  // a container's bind mount needs its folder
      std::filesystem::create_directories(std::filesystem::path(error_file).parent_path(), made);
      std::remove(error_file.c_str());  // a file from an earlier attempt is not this one's
    }
    joined = JoinCgroup(ctx, launch.spec);
    // The log is shared by every run of the replica; its last lines are this run's.
    log_start = FileSize(launch.spec.log_path);
  }
  if (launch.container && joined.ok()) PrepareContainer(ctx, launch, init);
  StatusOr<std::unique_ptr<ReplicaProcess>> spawned =
      joined.ok() ? ctx.launcher->Spawn(launch.spec) : joined;
  if (!spawned.ok()) {
    ReleaseCgroup(ctx);
    phase = Phase::kFailed;
    exit_code = 127;
    finished = now;
    message = spawned.status().message();
    ctx.emit({"Warning", "Failed", message}, now, "Pod/" + name);
    return;
  }
  process = std::move(spawned).value();
  std::string pid = " (pid " + std::to_string(process->pid()) + ")";
  if (init) {
    phase = Phase::kPending;
    ctx.emit({"Normal", "Started",
              "Started init container " + inits[step].name + ": " +
                  Abbreviate(launch.display_command, kEventCommandBytes) + pid},
             now, "Pod/" + name);
    return;
  }
  phase = Phase::kRunning;
  started = now;
  recent_output.clear();
  process_failure.reset();
  std::string devices;
  for (const auto& [var, value] : GpuEnv(VisibleGpus(*ctx.job, *ctx.gpus, type, index)))
    devices += (devices.empty() ? " with " : " ") + var + "=" + value;
  ctx.emit(
      {"Normal", "Started", "Started " + Abbreviate(command, kEventCommandBytes) + pid + devices},
      now, "Pod/" + name);
}

void LocalPod::PrepareContainer(PodContext& ctx, PreparedLaunch& launch, bool init) {
  const RuntimeHost& host = *ctx.options->runtime;
  ContainerRun& run = *launch.container;
  run.name = ContainerName(ctx.job->namespace_, ctx.job->info().name, name, attempt,
                           init ? inits[step].name : "");
  if (!init && !cgroup.dirs.empty()) {
    // The limits are on the replica's cgroup, as in process mode; the container goes below it
    // and the runner hears its OOM kills there.
    std::string parent = CgroupParentOf(ctx.options->cgroups, cgroup);
    if (!parent.empty()) {
      run.cgroup_parent = parent;
      run.memory_bytes.reset();
      launch.spec.cgroup_procs.clear();
      oom_watch = WatchOomEvents(cgroup);
    }
  }
  // No container outlives its client: the supervisor removes it once the client has ended
  // (also when the runner was killed), and leaves the runtime's monitor alone meanwhile.
  launch.spec.after_argv = RemoveArgv(host, run.name);
  launch.spec.reap_descendants = false;
  ApplyContainerRun(launch, host, ctx.options->base_env);
}

void LocalPod::PlanPulls(PodContext& ctx) {
  if (!main.container) return;
  const RuntimeHost& host = *ctx.options->runtime;
  std::vector<const PreparedLaunch*> launches;
  for (const InitLaunch& init : inits) launches.push_back(&init.launch);
  launches.push_back(&main);
  for (const PreparedLaunch* launch : launches) {
    const std::string& image = launch->container->image;
    if (std::find(pulls.begin(), pulls.end(), image) != pulls.end()) continue;
    auto known = ctx.image_present.find(image);
    bool present =
        known != ctx.image_present.end()
            ? known->second
            : (ctx.image_present[image] = ImagePresent(host, ctx.options->base_env, image));
    switch (DecidePull(image, launch->pull_policy, present)) {
      case PullAction::kPull:
        pulls.push_back(image);
        break;
      case PullAction::kNeverPullMissing:
        never_pull = "Container image \"" + image +
                     "\" is not present with pull policy of Never (" + RuntimeName(host.kind) +
                     " has no such image)";
        break;
      case PullAction::kNone:
        break;
    }
  }
}

void LocalPod::PullIfDue(PodContext& ctx) {
  if (!pull_at || *pull_at > *ctx.mono || terminating) return;
  pull_at.reset();
  SpawnStep(ctx);
}

void LocalPod::Terminate(PodContext& ctx) {
  if (terminating || deleted) return;
  terminating = true;
  restart_at.reset();
  pull_at.reset();
  if (process && !process->Poll()) {
    process->Signal(SIGTERM);
    kill_at = *ctx.mono + ctx.options->grace;
    ctx.emit({"Normal", "Killing", "Stopping " + name}, *ctx.now, "Pod/" + name);
  } else if (process && process->GroupAlive()) {
    // Its main process ended but some of its group lives on: gone (deleted, by Reap) only
    // once the group is, so that nothing of it overlaps what starts after it.
    process->Signal(SIGKILL);
  } else {
    deleted = true;
  }
}

void LocalPod::KillIfOverdue(PodContext& ctx) {
  if (!terminating || !kill_at || *kill_at > *ctx.mono || !process) return;
  process->Signal(SIGKILL);
  kill_at.reset();
  ctx.emit({"Warning", "Killing", name + " did not stop within the grace period; killed"}, *ctx.now,
           "Pod/" + name);
}

bool LocalPod::Alive() const {
  if (deleted) return false;
  if (restart_at || pull_at) return true;
  return process && process->GroupAlive();
}

std::optional<MonoTime> LocalPod::NextDeadline() const {
  std::optional<MonoTime> soonest;
  for (const std::optional<MonoTime>& d : {restart_at, pull_at, kill_at})
    if (d && (!soonest || *d < *soonest)) soonest = d;
  return soonest;
}

void LocalPod::ReapPull(PodContext& ctx, int code) {
  const Time now = *ctx.now;
  pulling = false;
  process.reset();
  std::string image = pulls.front();
  if (code == 0) {
    ctx.image_present[image] = true;
    pulls.erase(pulls.begin());
    pull_failures = 0;
    ctx.emit({"Normal", "Pulled", "Successfully pulled image \"" + image + "\""}, now,
             "Pod/" + name);
    if (!JobFinished(ctx) && !*ctx.interrupted_by) SpawnStep(ctx);
    return;
  }
  pull_failures++;
  ctx.tail_log(name, /*flush=*/false);
  pull_message = LastLine(ReadLogTail(ctx.dir->LogPath(name), kLastLinesBytes, log_start));
  Duration wait = RestartBackoff(pull_failures);
  pull_at = *ctx.mono + wait;
  ctx.emit({"Warning", "Failed",
            "Failed to pull image \"" + image + "\": " + pull_message + " (ErrImagePull)"},
           now, "Pod/" + name);
  ctx.emit({"Normal", "BackOff", "Back-off pulling image \"" + image + "\""}, now, "Pod/" + name);
}

void LocalPod::Reap(PodContext& ctx) {
  if (!process) return;
  std::optional<int> code = process->Poll();
  if (!code) return;
  const Time now = *ctx.now;
  // Like a container: when the main process ends, the rest of the group goes too.
  if (process->GroupAlive()) process->Signal(SIGKILL);
  if (terminating) {
    if (process->GroupAlive()) return;
    exit_code = code;
    finished = now;
    process.reset();
    ReleaseCgroup(ctx);
    deleted = true;
    return;
  }
  if (pulling) {
    ReapPull(ctx, *code);
    return;
  }
  bool init = step < inits.size();
  if (init && *code == 0 && (JobFinished(ctx) || *ctx.interrupted_by)) {
    process.reset();  // the job ended meanwhile: the main container is not started
    deleted = true;
    return;
  }
  if (init && *code == 0) {  // on to the next step, as the kubelet does
    process.reset();
    ctx.emit({"Normal", "Completed",
              "init container " + inits[step].name + " of " + name + " exited with code 0"},
             now, "Pod/" + name);
    step++;
    SpawnStep(ctx);
    return;
  }
  init_failed = init;
  exit_code = code;
  finished = now;
  exit_seq = ++ctx.exits;
  process.reset();
  ReleaseCgroup(ctx);
  ctx.tail_log(name, /*flush=*/false);  // its last lines before the news of its exit
  const std::string log = ctx.dir->LogPath(name);
  last_lines = ReadLogTail(log, kLastLinesBytes, init ? 0 : log_start);
  if (*code != 0 && !init) {
    // torchrun's report of a failed worker fills the last 2 KiB: look past it.
    std::string end = ReadLogTail(log, 8 * kLastLinesBytes, log_start);
    if (std::optional<std::string> worker = WorkerOutputBeforeTorchrunReport(end, kLastLinesBytes))
      last_lines = *worker;
  }
  if (!error_file.empty() && *code != 0) {
    std::string error = ReadLogTail(error_file, 64 * 1024);
    if (std::optional<std::string> root = TorchElasticErrorText(error, kLastLinesBytes))
      last_lines = *root;
  }
  std::string oom = oom_killed ? " (OOMKilled; its memory limit is " +
                                     FormatMemory(memory_limit.value_or(0)) + ")"
                               : "";
  std::string who = init ? "init container " + inits[step].name + " of " + name : name;
  ctx.emit({*code == 0 ? "Normal" : "Warning", "Exited",
            who + " exited with code " + std::to_string(*code) + oom},
           now, "Pod/" + name);
  ExitDecision exit =
      DecideExit(pod_policy, *code, restarts, JobFinished(ctx), *ctx.interrupted_by != 0);
  if (exit.restart) {
    restarts++;
    restart_at = *ctx.mono + exit.backoff;
    backoff = exit.backoff;
    ctx.emit({"Warning", "BackOff",
              "Back-off " + std::to_string(exit.backoff.count() / 1000) + "s restarting " + name},
             now, "Pod/" + name);
  } else {
    phase = exit.phase;
  }
}

engine::ReplicaObservation LocalPod::Observe() const {
  engine::ReplicaObservation o;
  o.name = name;
  o.type = type;
  o.index = index;
  o.phase = phase;
  o.exit_code = exit_code;
  o.restarts = restarts;
  o.attempt = job_attempt;
  o.notice = notice;
  o.notice_done = notice_done;
  o.terminating = terminating;
  o.finished_at = finished;
  o.exit_seq = exit_seq;
  if (exit_code) {
    o.end_reason = EndReason();
    o.end_message = !message.empty() ? message : last_lines;
  } else if (last_end) {  // runs again after an in-place restart
    o.exit_code = last_end->exit_code;
    o.finished_at = last_end->finished;
    o.end_reason = last_end->reason;
    o.end_message = last_end->output;
  }
  if (phase == Phase::kRunning && !restart_at) o.started_at = started;
  if (restart_at && !terminating) {
    // As the kubelet's container state: waiting for the back-off (a stable text, no
    // countdown, so the job's status is not rewritten while it waits).
    o.waiting_reason = "CrashLoopBackOff";
    o.waiting_message =
        "back-off " + std::to_string(backoff.count() / 1000) + " s before restarting " + name;
  }
  if (process && step < inits.size()) {
    o.waiting_reason = "PodInitializing";
    o.waiting_message = "init container " + inits[step].name + " is running";
  }
  if (!pulls.empty() && (pulling || pull_at)) {
    bool failed = pull_failures > 0;
    o.waiting_reason = failed ? "ImagePullBackOff" : "ContainerCreating";
    o.waiting_message = failed ? "Back-off pulling image \"" + pulls.front() + "\": " + pull_message
                               : "pulling image \"" + pulls.front() + "\"";
  }
  if (!never_pull.empty()) {
    o.waiting_reason = "ErrImageNeverPull";
    o.waiting_message = never_pull;
  }
  if (process) o.last_output = last_output ? last_output : started;
  o.process_failure = process_failure;
  return o;
}

void LocalPod::ReadOutputLine(const std::string& line, Time now) {
  if (!process_failure && phase == Phase::kRunning &&
      !api::TorchrunMayRestartWorkers(EnvValue(main.spec.env, "PET_MAX_RESTARTS"), command))
    if (std::optional<api::TorchrunWorkerExit> exit = api::ParseTorchrunWorkerExit(line)) {
      engine::ReplicaObservation::ProcessExit failure;
      failure.local_rank = exit->local_rank;
      failure.exit_code = exit->exit_code;
      failure.at = now;
      failure.output = recent_output;
      failure.rank = api::TorchrunGlobalRank(EnvValue(main.spec.env, "PET_NODE_RANK"),
                                             EnvValue(main.spec.env, "PET_NPROC_PER_NODE"), command,
                                             exit->local_rank);
      process_failure = std::move(failure);
    }
  recent_output += line;
  recent_output += '\n';
  if (recent_output.size() > kRecentOutputBytes)
    recent_output = std::string(LastLines(recent_output, kRecentOutputBytes));
}

json LocalPod::ToJson(const api::Job& job, const GpuAssignment& gpus) const {
  std::string state = engine::PhaseName(phase);
  if (deleted)
    state = "Stopped";
  else if (terminating)
    state = "Stopping";
  else if (restart_at)
    state = "Restarting";
  json j = {{"name", name},       {"type", type},
            {"index", index},     {"phase", engine::PhaseName(phase)},
            {"state", state},     {"restarts", restarts},
            {"attempt", attempt}, {"port", port},
            {"command", command}};
  json labels = {{api::kLabelJobName, job.name},
                 {api::kLabelReplicaType, api::ToLower(type)},
                 {api::kLabelReplicaIndex, std::to_string(index)}};
  if (api::PluginFor(job.kind).IsMasterRole(job, type, index))
    labels[api::kLabelJobRole] = "master";
  if (api::RestartScopeOf(job) == api::RestartScope::kGang)
    labels[api::kRestartAttemptLabel] = std::to_string(job_attempt);  // its own, not the job's
  j["labels"] = std::move(labels);
  if (exit_code) j["exitCode"] = *exit_code;
  if (!exit_code && last_end) {  // runs again after an in-place restart: how it ended
    j["lastExitCode"] = last_end->exit_code;
    if (last_end->finished) j["lastFinishTime"] = FormatRfc3339(*last_end->finished);
  }
  if (oom_killed) j["reason"] = "OOMKilled";
  if (init_failed) j["reason"] = "Init:Error";
  if (process && step < inits.size())
    j["initContainer"] = inits[step].name + " (" + std::to_string(step_base + step + 1) + "/" +
                         std::to_string(init_total) + ")";
  if (exit_seq) j["exitSeq"] = exit_seq;
  if (process_failure) {
    json failed = {{"localRank", process_failure->local_rank},
                   {"exitCode", process_failure->exit_code}};
    if (process_failure->rank) failed["rank"] = *process_failure->rank;
    if (process_failure->at) failed["time"] = FormatRfc3339(*process_failure->at);
    j["processFailure"] = std::move(failed);
  }
  if (process) j["pid"] = process->pid();
  if (started) j["startTime"] = FormatRfc3339(*started);
  if (finished) j["finishTime"] = FormatRfc3339(*finished);
  if (!message.empty()) j["message"] = message;
  if (std::vector<Gpu> seen = VisibleGpus(job, gpus, type, index); !seen.empty()) {
    json devices = json::array();
    for (const Gpu& g : seen)
      devices.push_back({{"resource", g.resource}, {"index", g.index}, {"id", g.id}});
    j["gpus"] = std::move(devices);
  }
  return j;
}

}  // namespace trainctl::local
