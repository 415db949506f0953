#include "local/job_view.h"

#include "api/job.h"
#include "api/json_fields.h"
#include "engine/conditions.h"
#include "engine/diagnosis.h"
#include "engine/reconcile.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

bool Unfinished(const json& replica) {
  std::string phase = api::StringAt(replica, "phase");
  return phase == "Pending" || phase == "Running";
}

std::optional<Time> TimeAt(const json& replica, const char* key) {
  if (!replica.contains(key) || !replica[key].is_string()) return std::nullopt;
  return ParseRfc3339(replica[key].get<std::string>());
}

std::optional<int> IntIn(const json& replica, const char* key) {
  if (!replica.contains(key) || !replica[key].is_number_integer()) return std::nullopt;
  return replica[key].get<int>();
}

// What the engine needs of a replica record (replicas.json) to judge its end.
engine::ReplicaObservation ObservationOf(const json& r) {
  engine::ReplicaObservation o;
  o.name = api::StringAt(r, "name");
  o.type = api::StringAt(r, "type");
  o.index = static_cast<int>(api::IntAt(r, "index", 0));
  std::string phase = api::StringAt(r, "phase");
  o.phase = phase == "Failed"      ? engine::Phase::kFailed
            : phase == "Succeeded" ? engine::Phase::kSucceeded
            : phase == "Running"   ? engine::Phase::kRunning
                                   : engine::Phase::kPending;
  o.restarts = static_cast<int>(api::IntAt(r, "restarts", 0));
  o.exit_code = IntIn(r, "exitCode");
  o.finished_at = TimeAt(r, "finishTime");
  if (!o.exit_code) {  // runs again after an in-place restart
    o.exit_code = IntIn(r, "lastExitCode");
    o.finished_at = TimeAt(r, "lastFinishTime");
  }
  o.exit_seq = api::IntAt(r, "exitSeq", 0);
  return o;
}

}  // namespace

std::optional<LostRunnerUpdate> DecideLostRunner(const json& job, const json& replicas,
                                                 int runner_pid, Time now) {
  StatusOr<api::Job> decoded = api::DecodeJob(job);
  if (!decoded.ok() || engine::IsFinished(decoded->status)) return std::nullopt;
  std::string who = runner_pid > 0
                        ? "its runner (trainctl run, pid " + std::to_string(runner_pid) + ")"
                        : "its runner (trainctl run)";
  std::string message = std::string(decoded->info().name) + " " + decoded->name +
                        " did not finish: " + who +
                        " is gone (killed, out of memory, or the machine restarted); its "
                        "replicas are no longer watched.";
  decoded->status = engine::FailedStatus(*decoded, message, now);
  for (auto it = decoded->status.conditions.rbegin(); it != decoded->status.conditions.rend();
       ++it) {
    if (it->type == engine::kFailed) {
      it->reason = kRunnerLostReason;
      break;
    }
  }
  LostRunnerUpdate update;
  update.job = api::EncodeJob(*decoded);
  update.replicas = replicas.is_array() ? replicas : json::array();
  for (json& r : update.replicas) {
    if (!r.is_object() || !Unfinished(r)) continue;
    r["phase"] = "Unknown";
    r["state"] = "Lost";
    r.erase("pid");
    r["message"] = "the runner is gone; this replica's process is no longer watched";
  }
  return update;
}

std::optional<json> FirstFailedReplica(const json& replicas) {
  if (!replicas.is_array()) return std::nullopt;
  std::vector<engine::ReplicaObservation> observed;
  std::vector<const json*> records;
  for (const json& r : replicas) {
    if (!r.is_object()) continue;
    observed.push_back(ObservationOf(r));
    records.push_back(&r);
  }
  std::optional<size_t> first = engine::FirstFailedIndex(observed);
  if (!first) return std::nullopt;
  return *records[*first];
}

StatusOr<json> MergeMetadataPatch(const json& current, const json& body) {
  if (!body.is_object()) return InvalidError("patch: expected a JSON object (a merge patch)");
  json out = current.is_object() ? current : json::object();
  for (const auto& [key, value] : body.items()) {
    if (key != "metadata")
      return InvalidError(key + ": Forbidden: a local job's " + key +
                          " cannot change once it runs; only metadata.labels and "
                          "metadata.annotations can");
    if (!value.is_object()) return InvalidError("metadata: expected an object");
    for (const auto& [field, entries] : value.items()) {
      if (field != "labels" && field != "annotations")
        return InvalidError("metadata." + field +
                            ": Forbidden: only metadata.labels and metadata.annotations of a "
                            "local job can change");
      if (!entries.is_object() && !entries.is_null())
        return InvalidError("metadata." + field + ": expected an object of strings");
      json& merged = out[field];
      if (!merged.is_object()) merged = json::object();
      if (entries.is_null()) {
        for (auto& [k, v] : merged.items()) v = nullptr;
        continue;
      }
      for (const auto& [k, v] : entries.items()) {
        if (!v.is_string() && !v.is_null())
          return InvalidError("metadata." + field + "[" + k + "]: expected a string or null");
        merged[k] = v;
      }
    }
  }
  return out;
}

json ApplyMetadataPatch(json job, const json& patch) {
  if (!patch.is_object() || !job.is_object()) return job;
  json& metadata = job["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  for (const char* field : {"labels", "annotations"}) {
    if (!patch.contains(field) || !patch[field].is_object()) continue;
    json& target = metadata[field];
    if (!target.is_object()) target = json::object();
    for (const auto& [k, v] : patch[field].items()) {
      if (v.is_null())
        target.erase(k);
      else
        target[k] = v;
    }
    if (target.empty()) metadata.erase(field);
  }
  return job;
}

}  // namespace trainctl::local
