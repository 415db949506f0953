#include "jobs/local_sweep.h"

#include "api/job.h"
#include "api/json_fields.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "jobs/history_capture.h"
#include "local/job_view.h"

namespace trainctl::jobs {
namespace {

using nlohmann::json;

// The job's ttlSecondsAfterFinished has passed at `now` (the engine's decision).
bool TtlPassed(const json& job, Time now) {
  StatusOr<api::Job> decoded = api::DecodeJob(job);
  if (!decoded.ok() || !decoded->run_policy.ttl_seconds_after_finished) return false;
  if (!engine::IsFinished(decoded->status)) return false;
  return engine::Reconcile(*decoded, {}, now).delete_job;
}

std::string Named(const local::JobKey& key) {
  return key.namespace_ + "/" + key.name + " (" + api::Info(key.kind).name + ")";
}

// Removes the folder under the runner lock; false when a runner holds it.
StatusOr<bool> RemoveUnlessRunning(local::JobDir& dir) {
  Status locked = dir.AcquireRunnerLock();
  if (locked.code() == StatusCode::kAlreadyExists) return false;
  TRAINCTL_RETURN_IF_ERROR(locked);
  Status removed = dir.RemoveAll();
  dir.ReleaseRunnerLock();
  TRAINCTL_RETURN_IF_ERROR(removed);
  return true;
}

}  // namespace

SweepDecision DecideSweep(const LocalJobSnapshot& seen, bool has_record, Time now) {
  SweepDecision d;
  if (seen.runner_active) return d;
  d.record_lost = seen.runner_lost;
  bool finished = IsFinishedJob(seen.job);
  d.capture = finished && !has_record;
  d.remove = finished && TtlPassed(seen.job, now);
  return d;
}

StatusOr<bool> RecordLostRunner(local::JobDir& dir, Time now) {
  int last_pid = dir.LastRunnerPid();  // taking the lock writes this process's pid there
  Status locked = dir.AcquireRunnerLock();
  if (locked.code() == StatusCode::kAlreadyExists) return false;  // a runner started meanwhile
  TRAINCTL_RETURN_IF_ERROR(locked);
  StatusOr<json> job = dir.ReadJob();
  StatusOr<json> replicas = dir.ReadReplicas();
  Status written = job.ok() ? Status::Ok() : job.status();
  std::optional<local::LostRunnerUpdate> update;
  if (written.ok()) {
    if (!replicas.ok() && replicas.status().code() != StatusCode::kNotFound)
      written = replicas.status();
    else
      update =
          local::DecideLostRunner(*job, replicas.ok() ? *replicas : json::array(), last_pid, now);
  }
  if (update) {
    written = dir.WriteJob(update->job);
    if (written.ok()) written = dir.WriteReplicas(update->replicas);
    // Best effort: the status above already says what happened.
    if (written.ok()) dir.AppendEvent(RunnerLostEvent(update->job, now)).IgnoreError();
  }
  dir.ReleaseRunnerLock();
  if (!written.ok())
    return IoError("cannot record that the runner of " + dir.path() +
                   " is gone: " + written.message());
  return update.has_value();
}

SweepReport SweepLocalJobs(const std::string& root, const std::optional<std::string>& ns,
                           const HistoryOpener& history, const Clock& clock) {
  SweepReport report;
  history::HistoryStore* store = nullptr;
  bool opened = false;
  for (const local::JobKey& key : local::ListJobs(root, ns)) {
    local::JobDir dir(root, key);
    Time now = clock.Now();
    StatusOr<LocalJobSnapshot> seen = ReadLocalJob(dir, now, /*with_events=*/false);
    if (!seen.ok()) {
      if (seen.status().code() != StatusCode::kNotFound)  // not a job being removed
        report.warnings.push_back(seen.status().message());
      continue;
    }
    if (seen->runner_active) continue;
    std::string uid = api::StringAt(seen->job.value("metadata", json::object()), "uid");
    bool has_record = true;
    if (IsFinishedJob(seen->job) && !uid.empty() && history) {
      if (!opened) store = history(), opened = true;
      has_record = !store || store->Has(uid);
    }
    SweepDecision step = DecideSweep(*seen, has_record, now);
    if (step.record_lost) {
      StatusOr<bool> recorded = RecordLostRunner(dir, now);
      if (!recorded.ok()) {
        report.warnings.push_back(recorded.status().message());
        continue;
      }
      if (!*recorded) continue;  // a runner took the job meanwhile
      report.lost.push_back(key);
    }
    if (step.capture) {
      StatusOr<bool> captured = CaptureLocalJob(root, key, *store, {}, clock);
      if (!captured.ok())
        report.warnings.push_back("not recorded in the job history: " + Named(key) + ": " +
                                  captured.status().message());
      else if (*captured)
        report.recorded.push_back(key);
    }
    if (step.remove) {
      StatusOr<bool> removed = RemoveUnlessRunning(dir);
      if (!removed.ok())
        report.warnings.push_back("cannot remove " + dir.path() +
                                  " (its TTL has passed): " + removed.status().message());
      else if (*removed)
        report.removed.push_back(key);
    }
  }
  return report;
}

}  // namespace trainctl::jobs
