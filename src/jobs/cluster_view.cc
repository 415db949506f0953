#include "jobs/cluster_view.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "api/kinds.h"

namespace trainctl::jobs {

using nlohmann::json;

namespace {

const json& Field(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

std::string Str(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

long long Int(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_number_integer() ? v.get<long long>() : 0;
}

const json& Items(const json& list) {
  static const json kEmpty = json::array();
  const json& items = Field(list, "items");
  return items.is_array() ? items : kEmpty;
}

bool OwnedBy(const json& pod, const std::string& uid) {
  if (uid.empty()) return true;
  const json& refs = Field(Field(pod, "metadata"), "ownerReferences");
  if (!refs.is_array()) return false;
  for (const json& ref : refs)
    if (Str(ref, "uid") == uid && Field(ref, "controller") == json(true)) return true;
  return false;
}

// A pod of the JobSet a TrainJob runs as (its Jobs own the pods; the JobSet, named after the
// TrainJob, is the TrainJob's): it carries JobSet's name label.
bool OfJobSet(const json& pod) {
  return !Str(Field(Field(pod, "metadata"), "labels"), kLabelJobSetName).empty();
}

// An MPIJob v2beta1's launcher: the pod its batch Job `<job>-launcher` made (job-role launcher,
// job-name <job>), not a pod of the job's own.
bool LaunchedForJob(const json& pod) {
  const json& md = Field(pod, "metadata");
  const json& labels = Field(md, "labels");
  if (Str(labels, api::kLabelJobRole) != "launcher") return false;
  const std::string job = Str(labels, api::kLabelJobName);
  const json& refs = Field(md, "ownerReferences");
  if (job.empty() || !refs.is_array()) return false;
  for (const json& ref : refs)
    if (Str(ref, "kind") == "Job" && Str(ref, "name") == job + "-launcher" &&
        Field(ref, "controller") == json(true))
      return true;
  return false;
}

// The status of the container the job runs (the default one, else the first listed).
const json& MainContainerStatus(const json& pod, const std::string& container) {
  static const json kNull;
  const json& statuses = Field(Field(pod, "status"), "containerStatuses");
  if (!statuses.is_array() || statuses.empty()) return kNull;
  for (const json& s : statuses)
    if (Str(s, "name") == container) return s;
  return statuses[0];
}

std::string DefaultContainerOf(const json& pod) {
  const json& labels = Field(Field(pod, "metadata"), "labels");
  std::string controller = Str(labels, api::kLabelOperatorName);
  for (const api::KindInfo& k : api::AllKinds())
    if (controller == k.controller_name) return k.default_container;
  return "";
}

std::string PodState(const json& pod, const json& container_status) {
  if (Field(Field(pod, "metadata"), "deletionTimestamp").is_string()) return "Terminating";
  const json& state = Field(container_status, "state");
  std::string reason = Str(Field(state, "waiting"), "reason");
  if (reason.empty()) reason = Str(Field(state, "terminated"), "reason");
  std::string phase = Str(Field(pod, "status"), "phase");
  if (!reason.empty() && reason != "Completed" && reason != "Error") return reason;
  return phase.empty() ? "Unknown" : phase;
}

std::string EventTime(const json& e) {
  for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"})
    if (std::string t = Str(e, key); !t.empty()) return t;
  const json& series = Field(e, "series");
  return Str(series, "lastObservedTime");
}

}  // namespace

json ReplicaRowsFromPods(const json& pod_list, const std::string& job_uid,
                         const json& replica_specs) {
  auto exact_type = [&](const std::string& label) {
    if (replica_specs.is_object())
      for (auto it = replica_specs.begin(); it != replica_specs.end(); ++it)
        if (api::ToLower(it.key()) == label) return it.key();
    return label;
  };
  std::vector<json> rows;
  for (const json& pod : Items(pod_list)) {
    if (!OwnedBy(pod, job_uid) && !LaunchedForJob(pod) && !OfJobSet(pod)) continue;
    const json& md = Field(pod, "metadata");
    const json& labels = Field(md, "labels");
    // mpi-operator's pods (MPIJob v2beta1) name their role, not a replica type; a JobSet's
    // its replicated job and completion index.
    std::string type = Str(labels, api::kLabelReplicaType);
    if (type.empty()) type = Str(labels, api::kLabelJobRole);
    if (type.empty()) type = Str(labels, kLabelReplicatedJobName);
    std::string index_text = Str(labels, api::kLabelReplicaIndex);
    if (index_text.empty()) index_text = Str(labels, api::kCompletionIndexAnnotation);
    long long index = 0;
    if (!index_text.empty() && std::all_of(index_text.begin(), index_text.end(),
                                           [](unsigned char c) { return std::isdigit(c) != 0; }))
      index = std::stoll(index_text.substr(0, 9));
    const json& cs = MainContainerStatus(pod, DefaultContainerOf(pod));
    json row = {{"name", Str(md, "name")},
                {"type", exact_type(type)},
                {"index", index},
                {"state", PodState(pod, cs)},
                {"restarts", Int(cs, "restartCount")},
                {"node", Str(Field(pod, "spec"), "nodeName")},
                {"podIP", Str(Field(pod, "status"), "podIP")}};
    const json& terminated = Field(Field(cs, "state"), "terminated");
    if (terminated.is_object() && Field(terminated, "exitCode").is_number_integer())
      row["exitCode"] = Int(terminated, "exitCode");
    rows.push_back(std::move(row));
  }
  return SortedReplicaRows(std::move(rows));
}

json ReplicaRowFromObservation(const engine::ReplicaObservation& replica, const std::string& node) {
  std::string state = engine::PhaseName(replica.phase);
  if (replica.terminating) {
    state = "Terminating";
  } else if (!replica.waiting_reason.empty()) {
    state = replica.waiting_reason;
  } else if (!replica.end_reason.empty() && replica.end_reason != "Completed" &&
             replica.end_reason != "Error") {
    state = replica.end_reason;
  }
  json row = {{"name", replica.name}, {"type", replica.type},         {"index", replica.index},
              {"state", state},       {"restarts", replica.restarts}, {"node", node}};
  if (replica.exit_code) row["exitCode"] = *replica.exit_code;
  if (!replica.end_reason.empty()) row["reason"] = replica.end_reason;
  if (replica.finished_at) row["finishTime"] = FormatRfc3339(*replica.finished_at);
  return row;
}

json SortedReplicaRows(std::vector<json> rows) {
  auto key = [](const json& r) {
    return std::make_tuple(Str(r, "type"), Int(r, "index"), Str(r, "name"));
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const json& a, const json& b) { return key(a) < key(b); });
  json out = json::array();
  for (json& r : rows) out.push_back(std::move(r));
  return out;
}

json EventRow(const std::string& time, const std::string& type, const std::string& reason,
              long long count, const std::string& object, const std::string& message) {
  return {{"time", time},
          {"type", type},
          {"reason", count > 1 ? reason + " (x" + std::to_string(count) + ")" : reason},
          {"object", object},
          {"message", message}};
}

std::vector<json> EventRowsFromApi(const json& event_list) {
  std::vector<json> rows;
  for (const json& e : Items(event_list)) {
    const json& involved = Field(e, "involvedObject");
    rows.push_back(EventRow(EventTime(e), Str(e, "type"), Str(e, "reason"), Int(e, "count"),
                            Str(involved, "kind") + "/" + Str(involved, "name"),
                            Str(e, "message")));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return a["time"].get<std::string>() < b["time"].get<std::string>();
  });
  return rows;
}

std::vector<json> MergeEventRows(std::vector<json> listed, const std::vector<json>& known) {
  auto key = [](const json& row) {
    std::string reason = Str(row, "reason");
    return std::make_tuple(Str(row, "type"), reason.substr(0, reason.find(" (x")),
                           Str(row, "message"));
  };
  std::set<std::tuple<std::string, std::string, std::string>> have;
  for (const json& row : listed) have.insert(key(row));
  for (const json& row : known)
    if (!have.count(key(row))) listed.push_back(row);
  std::stable_sort(listed.begin(), listed.end(),
                   [](const json& a, const json& b) { return Str(a, "time") < Str(b, "time"); });
  return listed;
}

std::vector<LogTarget> LogTargets(const json& pod_list, const std::string& job_name,
                                  const std::string& job_uid, const std::string& default_container,
                                  const std::string& replica) {
  std::vector<LogTarget> out;
  std::string prefix = job_name + "-";
  for (const json& pod : Items(pod_list)) {
    if (!OwnedBy(pod, job_uid) && !LaunchedForJob(pod) && !OfJobSet(pod)) continue;
    LogTarget t;
    t.pod = Str(Field(pod, "metadata"), "name");
    if (t.pod.empty()) continue;
    t.short_name = t.pod.rfind(prefix, 0) == 0 ? t.pod.substr(prefix.size()) : t.pod;
    if (!replica.empty() && replica != t.short_name && replica != t.pod) continue;
    const json& containers = Field(Field(pod, "spec"), "containers");
    if (containers.is_array()) {
      for (const json& c : containers)
        if (Str(c, "name") == default_container) t.container = default_container;
      if (t.container.empty() && !containers.empty()) t.container = Str(containers[0], "name");
    }
    const json& cs = MainContainerStatus(pod, t.container);
    const json& state = Field(cs, "state");
    t.started = Field(state, "running").is_object() || Field(state, "terminated").is_object() ||
                Field(cs, "lastState").contains("terminated");
    t.restarts = static_cast<int>(Int(cs, "restartCount"));
    t.state = PodState(pod, cs);
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const LogTarget& a, const LogTarget& b) { return a.short_name < b.short_name; });
  return out;
}

}  // namespace trainctl::jobs
