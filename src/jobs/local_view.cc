#include "jobs/local_view.h"

#include <deque>
#include <fstream>

#include "api/json_fields.h"
#include "local/job_view.h"

namespace trainctl::jobs {

using nlohmann::json;

namespace {

Status ReadInto(local::JobDir& dir, bool with_events, LocalJobSnapshot* out) {
  StatusOr<json> job = dir.ReadJob();
  if (!job.ok()) return job.status();
  StatusOr<json> patch = dir.ReadMetadataPatch();
  if (!patch.ok()) return patch.status();
  out->job = local::ApplyMetadataPatch(std::move(job).value(), *patch);
  StatusOr<json> replicas = dir.ReadReplicas();
  if (!replicas.ok() && replicas.status().code() != StatusCode::kNotFound)
    return replicas.status();  // damaged: say so, naming the file
  out->replicas = replicas.ok() ? *replicas : json::array();
  if (with_events) {
    StatusOr<std::vector<json>> events = dir.ReadEvents();
    if (events.ok()) out->events = std::move(events).value();
  }
  return Status::Ok();
}

}  // namespace

StatusOr<LocalJobSnapshot> ReadLocalJob(local::JobDir& dir, Time now, bool with_events) {
  LocalJobSnapshot snap;
  snap.path = dir.path();
  snap.log_dir = dir.LogDir();
  TRAINCTL_RETURN_IF_ERROR(ReadInto(dir, with_events, &snap));
  snap.runner_active = dir.RunnerActive(&snap.runner_pid);
  if (snap.runner_active) return snap;
  int last_pid = dir.LastRunnerPid();
  std::optional<local::LostRunnerUpdate> seen =
      local::DecideLostRunner(snap.job, snap.replicas, last_pid, now);
  if (!seen) return snap;
  // Under the lock, so that a runner starting now and this reader do not both write.
  Status locked = dir.AcquireRunnerLock();
  if (locked.code() == StatusCode::kAlreadyExists) {  // a runner started meanwhile
    snap.runner_active = dir.RunnerActive(&snap.runner_pid);
    return snap;
  }
  if (!locked.ok()) {  // a read-only state folder: tell the truth without recording it
    snap.job = std::move(seen->job);
    snap.replicas = std::move(seen->replicas);
    return snap;
  }
  Status read = ReadInto(dir, with_events, &snap);
  std::optional<local::LostRunnerUpdate> update =
      read.ok() ? local::DecideLostRunner(snap.job, snap.replicas, last_pid, now) : std::nullopt;
  Status written = Status::Ok();
  if (update) {
    written = dir.WriteJob(update->job);
    if (written.ok()) written = dir.WriteReplicas(update->replicas);
    if (written.ok()) {
      const json& last = update->job["status"]["conditions"].back();
      // Best effort: the status above already says what happened.
      dir.AppendEvent({{"type", "Warning"},
                       {"reason", local::kRunnerLostReason},
                       {"message", api::StringAt(last, "message")},
                       {"object", api::StringAt(update->job, "kind") + "/" +
                                      api::StringAt(update->job["metadata"], "name")},
                       {"time", FormatRfc3339(now)}})
          .IgnoreError();
    }
  }
  dir.ReleaseRunnerLock();
  TRAINCTL_RETURN_IF_ERROR(read);
  if (!written.ok())
    return IoError("cannot record that the runner of " + dir.path() +
                   " is gone: " + written.message());
  if (update) {
    snap.job = std::move(update->job);
    snap.replicas = std::move(update->replicas);
    if (with_events) {
      StatusOr<std::vector<json>> events = dir.ReadEvents();
      if (events.ok()) snap.events = std::move(events).value();
    }
  }
  snap.runner_pid = 0;
  return snap;
}

std::vector<std::string> TailLines(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

JobDetail LocalDetail(const LocalJobSnapshot& snapshot, const std::optional<json>& failed_replica,
                      const std::vector<std::string>& failed_log_tail, json workspaces) {
  JobDetail detail;
  detail.job = snapshot.job;
  for (const json& r : snapshot.replicas) {
    json copy = r;
    if (r.is_object() && r.contains("name") && r["name"].is_string())
      copy["logFile"] = snapshot.log_dir + "/" + r["name"].get<std::string>() + ".log";
    detail.replicas.push_back(std::move(copy));
  }
  detail.events = snapshot.events;
  if (failed_replica) {
    detail.failure = json::object();
    for (const char* key : {"name", "type", "index", "exitCode", "reason", "finishTime", "message"})
      if (failed_replica->contains(key)) detail.failure[key] = (*failed_replica)[key];
    detail.failure["lastLogLines"] = failed_log_tail;
  }
  detail.workspaces = std::move(workspaces);
  json runner = {{"active", snapshot.runner_active}};
  if (snapshot.runner_active && snapshot.runner_pid > 0) runner["pid"] = snapshot.runner_pid;
  detail.location = {{"runner", runner}, {"path", snapshot.path}, {"logDir", snapshot.log_dir}};
  return detail;
}

}  // namespace trainctl::jobs
