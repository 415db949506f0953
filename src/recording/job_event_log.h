// JobEventLog: the events this operator recorded for each job since it began leading, kept for
// the job history, so that a finished job's record lists its events without asking the API
// server (at 1,000 finishing jobs that list was a large part of the history's cost:
// docs/benchmarks.md). Fed by the EventRecorder's tap (kube/event_recorder.h).
//
// - Rows: {time, type, reason, object, message} as jobs::EventRowsFromApi gives them. Events with
//   the same type, reason and message are one row with a count and the latest time, as the
//   event correlator aggregates repeats.
// - Complete or not: the controller Open()s a job when it first syncs it without any status
//   (a new job: no leader recorded anything for it before). A job that was not opened, such
//   as one that was already running when this operator began leading, may have events another
//   leader recorded, so Rows() says they are not complete and the caller lists them too.
// - Bounded: at most kMaxRowsPerJob rows per job (the oldest go) and kMaxJobs jobs (the job
//   whose last event is oldest goes, and is then not complete).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "kube/event_correlator.h"

namespace trainctl::recording {

class JobEventLog {
 public:
  static constexpr size_t kMaxRowsPerJob = 100;
  static constexpr size_t kMaxJobs = 20000;

  explicit JobEventLog(const Clock* clock, size_t max_jobs = kMaxJobs)
      : clock_(clock), max_jobs_(max_jobs) {}

  // Every event of job `uid` is seen from now on, and none came before (a new job).
  void Open(const std::string& uid);
  // Keeps `event` when its object is a kubeflow.org/v1 job or a TrainJob
  // (trainer.kubeflow.org/v1alpha1) with a uid.
  void Add(const kube::EventInput& event);
  struct Seen {
    std::vector<nlohmann::json> rows;  // oldest first
    bool complete = false;             // every event of the job since it was created
  };
  Seen Rows(const std::string& uid) const;
  void Forget(const std::string& uid);
  size_t jobs() const;

 private:
  void EvictLocked();  // under mu_
  // A job's rows packed into one string, oldest first: at 1,000 running jobs of 8 replicas
  // this log holds ~19,000 rows, and one allocation per job instead of one per row halves its
  // memory (docs/benchmarks.md). Each row is a RowHeader followed by its text,
  // type '\n' reason '\n' message.
  struct RowHeader {
    int64_t last_ns;  // the latest time, since the clock's epoch
    uint32_t count;
    uint32_t size;  // of the text that follows
  };
  struct Job {
    std::string object;  // "PyTorchJob/name"
    std::string packed;
    size_t rows = 0;
    Time last{};
    bool complete = false;
  };
  static void AddRow(Job& job, const std::string& text, Time now);
  static RowHeader HeaderAt(const std::string& packed, size_t at);

  const Clock* clock_;
  size_t max_jobs_;
  mutable std::mutex mu_;
  std::map<std::string, Job> by_uid_;  // guarded by mu_
};

}  // namespace trainctl::recording
