// The job history's records, made from what the data layer knows about a finished job
// (history/record.h has the shape): the same record for a local job and a cluster job.
//
// MakeRecord is pure. CaptureLocalJob reads a local job (jobs/local_source.h), its log tails
// and metrics, and stores the record; it skips jobs that have not finished.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

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

// True when the job has its final condition (Succeeded or Failed).
bool IsFinishedJob(const nlohmann::json& job);

// Stores the record of the local job `key` under `root` when it has finished. Returns whether
// a record was written.
StatusOr<bool> CaptureLocalJob(const std::string& root, const local::JobKey& key,
                               history::HistoryStore& store, const history::Limits& limits,
                               const Clock& clock);

// The record of the cluster job `name` of `kind` in `ns`, read now; nullopt while it has not
// finished. kNotFound when it is gone or its uid is not `uid` (a job deleted and made again
// under the same name is another job). Log tails come through pods/log (the last
// history::kLogTailBytes of each pod's log). Does API calls only; the caller stores it.
StatusOr<std::optional<nlohmann::json>> ClusterRecord(ClusterJobSource& source,
                                                      const std::string& ns, api::Kind kind,
                                                      const std::string& name,
                                                      const std::string& uid, const Clock& clock);

// <root>/history.db
std::string LocalHistoryPath(const std::string& root);

}  // namespace trainctl::jobs
