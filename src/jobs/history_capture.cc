#include "jobs/history_capture.h"

#include <fstream>
#include <set>

#include "api/json_fields.h"
#include "jobs/local_source.h"
#include "jobs/why.h"
#include "metrics/series.h"

namespace trainctl::jobs {

using nlohmann::json;

namespace {

// The end of a file (history::kLogTailBytes) and its size; empty when it cannot be read.
LogTail ReadTail(const std::string& path) {
  LogTail out;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return out;
  std::streamoff size = in.tellg();
  out.bytes = size > 0 ? static_cast<size_t>(size) : 0;
  std::streamoff from = size > static_cast<std::streamoff>(history::kLogTailBytes)
                            ? size - static_cast<std::streamoff>(history::kLogTailBytes)
                            : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  out.tail = from > 0 ? history::LogTail(text) : text;
  return out;
}

}  // namespace

json MakeRecord(const JobDetail& detail, const std::string& source,
                const std::map<std::string, LogTail>& logs, const json& metrics, Time now) {
  const json& md = detail.job.value("metadata", json::object());
  json log_doc = json::object();
  for (const auto& [replica, tail] : logs)
    log_doc[replica] = {{"bytes", tail.bytes}, {"tail", tail.tail}};
  return {{"uid", api::StringAt(md, "uid")},
          {"source", source},
          {"namespace", api::StringAt(md, "namespace")},
          {"kind", api::StringAt(detail.job, "kind")},
          {"name", api::StringAt(md, "name")},
          {"job", detail.job},
          {"why", JobWhy(detail.job)},
          {"failure", detail.failure},
          {"replicas", detail.replicas},
          {"events", detail.events},
          {"logs", log_doc},
          {"metrics", metrics},
          {"recordedAt", FormatRfc3339(now)}};
}

history::Row RecordRow(const json& record) {
  return history::RowOf(record, JobWhyLine(record.value("job", json::object()), 240));
}

bool IsFinishedJob(const json& job) {
  std::string state = JobState(job);
  return state == "Succeeded" || state == "Failed" || state == "Complete";
}

StatusOr<bool> CaptureLocalJob(const std::string& root, const local::JobKey& key,
                               history::HistoryStore& store, const history::Limits& limits,
                               const Clock& clock) {
  LocalJobSource source(root, key.namespace_, clock);
  TRAINCTL_ASSIGN_OR_RETURN(JobDetail detail, source.Describe({key.kind, key.name}));
  if (!IsFinishedJob(detail.job)) return false;
  std::map<std::string, LogTail> logs;
  std::string prefix = key.name + "-";
  for (const json& r : detail.replicas) {
    std::string name = api::StringAt(r, "name"), file = api::StringAt(r, "logFile");
    if (name.empty() || file.empty()) continue;
    logs[name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name] = ReadTail(file);
  }
  StatusOr<json> metrics = source.Metrics(detail.job, "");
  json record =
      MakeRecord(detail, source.name(), logs, metrics.ok() ? *metrics : json(nullptr), clock.Now());
  TRAINCTL_RETURN_IF_ERROR(store.Put(record, RecordRow(record), limits, clock.Now()).status());
  return true;
}

StatusOr<json> SnapshotRecord(kube::Client& client, const ClusterSnapshot& snapshot,
                              const Clock& clock) {
  const json& md = snapshot.job.value("metadata", json::object());
  const std::string ns = api::StringAt(md, "namespace");
  JobDetail detail;
  detail.job = snapshot.job;
  detail.replicas = snapshot.replicas;
  detail.events = snapshot.events;
  if (!snapshot.events_complete) {
    TRAINCTL_ASSIGN_OR_RETURN(std::vector<json> listed, JobEvents(client, ns, snapshot.job));
    detail.events = MergeEventRows(std::move(listed), snapshot.events);
  }
  detail.failure = FailureSummary(snapshot.job, snapshot.replicas);
  if (!detail.failure.is_null()) detail.failure["lastLogLines"] = json::array();
  // Log tails of rank 0 (the metrics replica) and of the replicas that failed: at scale every
  // other request is load on the API server (docs/benchmarks.md).
  StatusOr<std::string> metrics_replica = !snapshot.metrics_replica ? MetricsReplica(snapshot.job)
                                          : snapshot.metrics_replica->empty()
                                              ? StatusOr<std::string>(NotFoundError("none"))
                                              : StatusOr<std::string>(*snapshot.metrics_replica);
  std::set<std::string> wanted;
  if (metrics_replica.ok()) wanted.insert(*metrics_replica);
  std::string prefix = api::StringAt(md, "name") + "-";
  std::string failed_first =
      detail.failure.is_null() ? "" : detail.failure["name"].get<std::string>();
  for (const json& r : snapshot.replicas) {
    std::string pod = api::StringAt(r, "name");
    bool failed = api::IntAt(r, "exitCode", 0) != 0 || api::StringAt(r, "state") == "Failed" ||
                  pod == failed_first;
    if (!pod.empty() && failed)
      wanted.insert(pod.rfind(prefix, 0) == 0 ? pod.substr(prefix.size()) : pod);
  }
  std::map<std::string, LogTail> logs;
  json metrics = nullptr;
  for (const LogTarget& t : snapshot.targets) {
    if (!t.started || !wanted.count(t.short_name)) continue;
    StatusOr<std::string> text = PodLogEnd(client, ns, t, 5000);
    if (!text.ok()) continue;
    LogTail tail;
    tail.tail = history::LogTail(*text);
    tail.bytes = text->size();  // what the kubelet still had of its end
    if (t.pod == failed_first) detail.failure["lastLogLines"] = LastLines(*text, kFailureLogLines);
    if (metrics_replica.ok() && t.short_name == *metrics_replica)
      metrics = metrics::SeriesFromRecords(metrics::RecordsFromOutput(*text, clock.Now()),
                                           t.short_name, false);
    logs[t.short_name] = std::move(tail);
  }
  return MakeRecord(detail, "kubernetes", logs, metrics, clock.Now());
}

std::string LocalHistoryPath(const std::string& root) { return root + "/history.db"; }

}  // namespace trainctl::jobs
