// JobEventLog: the events this operator recorded for each job since it began leading, kept for
// the job history, so that a finished job's record lists its events without asking the API
// server (at 1,000 finishing jobs that list was a large part of the history's cost:
// docs/benchmarks.md). Fed by the EventRecorder's tap (kube/event_recorder.h).
//
// - Rows: {time, type, reason, object, message} as jobs::EventRowsFromApi gives them. Events with
//   the same type, reason and message are one row with a count and the latest time, as the
//   event correlator aggregates repeats.
// - Complete or not: a job created before Begin() (plus kCreatedMargin for clock skew) may have
//   events another leader recorded, so Seen() says they are not complete and the caller lists
//   them too.
// - Bounded: at most kMaxRowsPerJob rows per job (the oldest go) and kMaxJobs jobs (the job
//   whose last event is oldest goes, and is then not complete).
//
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "kube/event_correlator.h"

namespace trainctl::op {

class JobEventLog {
 public:
  static constexpr size_t kMaxRowsPerJob = 100;
  static constexpr size_t kMaxJobs = 20000;
  static constexpr Duration kCreatedMargin{5000};

  explicit JobEventLog(const Clock* clock, size_t max_jobs = kMaxJobs)
      : clock_(clock), max_jobs_(max_jobs) {}

  // From now on every event of a job is seen.
  void Begin();
  // Keeps `event` when its object is a kubeflow.org job with a uid.
  void Add(const kube::EventInput& event);
  struct Seen {
    std::vector<nlohmann::json> rows;  // oldest first
    bool complete = false;             // every event of the job since it was created
  };
  // The rows of job `uid`, created at `created`.
  Seen Rows(const std::string& uid, Time created) const;
  void Forget(const std::string& uid);
  size_t jobs() const;

 private:
  struct Row {
    std::string type, reason, message, object;
    Time last{};
    long long count = 1;
  };
  struct Job {
    std::vector<Row> rows;
    Time last{};
  };

  const Clock* clock_;
  size_t max_jobs_;
  mutable std::mutex mu_;
  std::optional<Time> began_;          // guarded by mu_
  std::map<std::string, Job> by_uid_;  // guarded by mu_
};

}  // namespace trainctl::op
