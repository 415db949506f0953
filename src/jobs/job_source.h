// The job data layer. Every reader of jobs asks a JobSource:
//   - the CLI's get, describe, logs and wait (cli/job_commands.h);
//   - `describe -o json`, which the SDK reads;
//   - the dashboard.
// A JobSource gives the same shapes whether the jobs live on this machine (LocalJobSource,
// jobs/local_source.h) or on a Kubernetes API server (ClusterJobSource, jobs/cluster_source.h).
// Writes (run, delete, patch) are not here: they belong to the substrates. Reads never write:
// no method of a source changes a file, a lock or an API object. The local state folder's
// upkeep (a lost runner, the history, TTL removal) is the sweep's (jobs/local_sweep.h).
//
// A source is bound to a scope when it is made: one namespace, or all. Errors are values:
//   - kNotFound names the job and where it was looked for;
//   - kInvalid says a name is ambiguous;
//   - other codes carry the I/O error.
// A source is used from one thread at a time. Logs() may call its sinks from another thread,
// but never two at once.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "jobs/job_query.h"

namespace trainctl::jobs {

// What `describe` shows of one job, with the same fields from every source.
struct JobDetail {
  nlohmann::json job;  // the object, status included
  // One row per replica: name, type, index, state, restarts, and, when known, exitCode, reason,
  // startTime, finishTime; pid and logFile (local), or node and podIP (cluster).
  nlohmann::json replicas = nlohmann::json::array();
  std::vector<nlohmann::json> events;  // {time, type, reason, object, message}, oldest first
  // The replica that failed first, by the engine's one rule, or null. Fields: name, type, index,
  // exitCode, reason, finishTime, message, lastLogLines (up to kFailureLogLines).
  nlohmann::json failure = nullptr;
  // The PVCs the templates mount: {claim} plus, locally, the folder that stands in for each.
  nlohmann::json workspaces = nlohmann::json::array();
  // Where the job is, merged into the document. Locally: path, logDir and
  // runner {active, pid}. On a cluster: server and pods (a label selector).
  nlohmann::json location = nlohmann::json::object();
  // What could not be read (events a user may not list, …); the rest is still shown.
  std::vector<std::string> warnings;
};

// The short name ("master-0") of the replica whose output gives `job`'s metrics; kNotFound
// when its metrics are off; kInvalid when the object is not a job.
StatusOr<std::string> MetricsReplica(const nlohmann::json& job);

// How much of a pod's log a cluster source reads for metrics.
inline constexpr long long kMaxMetricLogBytes = 32ll << 20;

// How many log lines the failure summary carries.
inline constexpr size_t kFailureLogLines = 20;

// The machine-readable `describe -o json` document:
//   {source, job, why (jobs/why.h), replicas, events, failure, workspaces, warnings,
//    ...location}.
// Pure.
nlohmann::json DetailDocument(const JobDetail& detail, const std::string& source);

struct LogRequest {
  std::string replica;  // "worker-0" or the full replica name; empty: every replica
  bool follow = false;  // keep reading until the job has finished and every log has ended
};

// Sinks for Logs(). A complete line of one replica's log goes to the LogSink, which gets the
// replica's short name ("worker-0"). A note for the user, such as "worker-0 has no log yet",
// goes to the NoteSink.
using LogSink = std::function<void(const std::string& replica, std::string_view line)>;
using NoteSink = std::function<void(const std::string& note)>;

// A piece of one replica's log, for readers that resume (the dashboard).
struct LogChunk {
  std::string text;  // whole lines only, unless a single line is longer than the window
  size_t next = 0;   // the offset to read from next time
  size_t size = 0;   // the log's size as seen now
};

// The last `n` lines of `text` (a last line without its newline counts).
std::vector<std::string> LastLines(const std::string& text, size_t n);

// The whole lines of `window` (read from offset `from`), as a LogChunk of a log of `size`.
LogChunk WholeLines(std::string window, size_t from, size_t size);

class JobSource {
 public:
  virtual ~JobSource() = default;

  // "local" or "kubernetes".
  virtual std::string name() const = 0;
  // Where this source looks, for messages: "namespace default", "any namespace on https://…".
  virtual std::string Where() const = 0;
  // The namespace it reads, "" when it reads every namespace.
  virtual std::string Namespace() const = 0;
  // How often a reader that waits for a change should ask again.
  virtual Duration PollInterval() const = 0;

  // The jobs matching `filter` (empty kind or name: any), as objects with their status, in the
  // source's order. A source that cannot serve one kind (its CRD is missing) skips it when the
  // filter names no kind. A job that cannot be read is left out, and `notes` says why.
  virtual StatusOr<std::vector<nlohmann::json>> List(const JobRef& filter,
                                                     const NoteSink& notes) = 0;
  // One job.
  virtual StatusOr<nlohmann::json> Get(const JobRef& ref) = 0;
  // Whether the finished job `ref` names is still settling: its conditions are final but
  // replicas are still being stopped and their last log lines written (a local runner that
  // has not exited yet). Readers that hand the job's logs or folder to the user wait for it.
  virtual bool Settling(const JobRef& ref) { return false; }
  // One job with its replicas, events, first failure and workspaces.
  virtual StatusOr<JobDetail> Describe(const JobRef& ref) = 0;
  // The logs of `job` (as List or Get returned it). Returns when the logs have been read, or
  // with `follow` once the job has finished and its logs have ended. kNotFound when a named
  // replica has no log.
  virtual Status Logs(const nlohmann::json& job, const LogRequest& request, const LogSink& lines,
                      const NoteSink& notes) = 0;
  // The metric series of `job` (metrics/series.h's shape). With `replica` "" they come from
  // its metrics replica (api/metrics_policy.h): the records the runner stored, or on a cluster
  // that pod's log read now; kNotFound when the job's metrics are off. A `replica` named
  // ("worker-1") is read from its log now (at most kMaxMetricLogBytes of its end locally, of
  // its start on a cluster), whatever the annotations say: curves per rank. Empty series when
  // nothing was printed.
  virtual StatusOr<nlohmann::json> Metrics(const nlohmann::json& job,
                                           const std::string& replica) = 0;
  // Up to `max_bytes` of replica `replica`'s log (short name) from byte `from`. kNotFound
  // when the replica has no log. On a cluster the offset counts into the pod's current log.
  virtual StatusOr<LogChunk> ReadLog(const nlohmann::json& job, const std::string& replica,
                                     size_t from, size_t max_bytes) = 0;
};

}  // namespace trainctl::jobs
