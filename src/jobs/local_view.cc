#include "jobs/local_view.h"

#include <deque>
#include <fstream>

#include "api/json_fields.h"
#include "local/job_view.h"

namespace trainctl::jobs {

using nlohmann::json;

namespace {

Status ReadInto(const local::JobDir& dir, bool with_events, LocalJobSnapshot* out) {
  StatusOr<json> job = dir.ReadJob();
  if (!job.ok()) return job.status();
  StatusOr<json> patch = dir.ReadMetadataPatch();
  if (!patch.ok()) return patch.status();
  out->job = local::ApplyMetadataPatch(std::move(job).value(), *patch);
  // The trainer's newest progress report (local/status_server.h), where a TrainJob keeps it.
  StatusOr<json> trainer_status = dir.ReadTrainerStatus();
  if (trainer_status.ok() && trainer_status->is_object()) {
    json& status = out->job["status"];
    if (status.is_null()) status = json::object();
    if (status.is_object()) status["trainerStatus"] = std::move(trainer_status).value();
  }
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

json RunnerLostEvent(const json& lost_job, Time now) {
  json conditions = lost_job.value("status", json::object()).value("conditions", json::array());
  std::string message = conditions.is_array() && !conditions.empty()
                            ? api::StringAt(conditions.back(), "message")
                            : std::string();
  return {{"type", "Warning"},
          {"reason", local::kRunnerLostReason},
          {"message", message},
          {"object", api::StringAt(lost_job, "kind") + "/" +
                         api::StringAt(lost_job.value("metadata", json::object()), "name")},
          {"time", FormatRfc3339(now)}};
}

StatusOr<LocalJobSnapshot> ReadLocalJob(const local::JobDir& dir, Time now, bool with_events) {
  LocalJobSnapshot snap;
  snap.path = dir.path();
  snap.log_dir = dir.LogDir();
  TRAINCTL_RETURN_IF_ERROR(ReadInto(dir, with_events, &snap));
  snap.runner_active = dir.RunnerActive(&snap.runner_pid);
  if (snap.runner_active) return snap;
  snap.runner_pid = 0;
  std::optional<local::LostRunnerUpdate> lost =
      local::DecideLostRunner(snap.job, snap.replicas, dir.LastRunnerPid(), now);
  if (!lost) return snap;
  snap.job = std::move(lost->job);
  snap.replicas = std::move(lost->replicas);
  if (with_events) snap.events.push_back(RunnerLostEvent(snap.job, now));
  snap.runner_lost = true;
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
