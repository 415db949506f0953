// The job history's records, made from what the data layer knows about a finished job
// (history/record.h has the shape): the same record for a local job and a cluster job.
//
// MakeRecord is pure. CaptureLocalJob reads a local job (jobs/local_source.h), its log tails
// and metrics, and stores the record; it skips jobs that have not finished.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "history/store.h"
#include "jobs/cluster_source.h"
#include "jobs/job_source.h"
#include "local/state_store.h"

namespace trainctl::jobs {

struct LogTail {
  size_t bytes = 0;  // the whole log's size
  std::string tail;  // its end (history::LogTail)
};

// `logs`: replica short name → its tail. `metrics`: the series document, or null.
nlohmann::json MakeRecord(const JobDetail& detail, const std::string& source,
                          const std::map<std::string, LogTail>& logs, const nlohmann::json& metrics,
                          Time now);

// The record's columns (history::RowOf with the job's why line).
history::Row RecordRow(const nlohmann::json& record);

// True when the job has its final condition: Succeeded or Failed, or a TrainJob's Complete on a
// cluster (upstream's type).
bool IsFinishedJob(const nlohmann::json& job);

// Stores the record of the local job `key` under `root` when it has finished. Returns whether
// a record was written.
StatusOr<bool> CaptureLocalJob(const std::string& root, const local::JobKey& key,
                               history::HistoryStore& store, const history::Limits& limits,
                               const Clock& clock);

// What a controller knows of a finished cluster job from its own caches, enough for its record
// without listing anything (recording/history_snapshot.h makes it).
struct ClusterSnapshot {
  nlohmann::json job;              // with its final status, kind and apiVersion
  nlohmann::json replicas;         // rows of ReplicaRowsFromPods's shape, sorted
  std::vector<LogTarget> targets;  // each replica's pod and container, by short name
  // The events the controller recorded on the job, as rows, oldest first.
  std::vector<nlohmann::json> events;
  // `events` are all of them since the job was created. Otherwise the API's list is read and
  // those of `events` it lacks yet (still queued for the API) are added to it.
  bool events_complete = false;
  // The short name of the replica whose log gives the metric series and whose tail is always
  // kept (rank 0), when the controller decided it from the resolved job (a TrainJob, whose
  // groups come from its runtime; "": none). nullopt: the job's annotations say
  // (MetricsReplica).
  std::optional<std::string> metrics_replica;
};

// The record of a finished cluster job from its snapshot. Log tails come through pods/log (the
// last history::kLogTailBytes of rank 0's log, which also gives the metric series, and of each
// replica that failed; each from its target's container); the events through the API only when the
// snapshot lacks them. A log that cannot be read is left out of the record; an events list that
// fails is an error (the caller retries). Does API calls only; the caller stores the record.
// Thread-safe (the client is).
StatusOr<nlohmann::json> SnapshotRecord(kube::Client& client, const ClusterSnapshot& snapshot,
                                        const Clock& clock);

// <root>/history.db
std::string LocalHistoryPath(const std::string& root);

}  // namespace trainctl::jobs
