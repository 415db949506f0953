// LocalJobSource: the data layer (job_source.h) over this machine's state folder, the one
// `trainctl run` writes (local/state_store.h). Each job is read through jobs/local_view.h,
// which shows a job whose runner is gone as Failed (RunnerLost).
//
// Reads only: List, Get, Describe, Logs, Metrics and ReadLog never write a file, hold a lock
// or remove a folder (whether a runner is alive is tested with a shared flock released at once,
// which a starting runner retries past: local/state_store.h). A job whose ttlSecondsAfterFinished
// has passed is listed until it is removed; recording a lost runner, the history and TTL removal
// are the sweep's (jobs/local_sweep.h), which its owners call.
//
// Does file I/O. The clock is injected; logs are polled every PollInterval().
#pragma once

#include <optional>
#include <string>

#include "jobs/job_source.h"
#include "local/state_store.h"

namespace trainctl::jobs {

class LocalJobSource final : public JobSource {
 public:
  // `ns`: one namespace, or nullopt for every namespace.
  LocalJobSource(std::string state_root, std::optional<std::string> ns, const Clock& clock)
      : root_(std::move(state_root)), ns_(std::move(ns)), clock_(clock) {}

  std::string name() const override { return "local"; }
  std::string Where() const override;
  std::string Namespace() const override { return ns_.value_or(""); }
  Duration PollInterval() const override { return Duration(200); }
  StatusOr<std::vector<nlohmann::json>> List(const JobRef& filter, const NoteSink& notes) override;
  StatusOr<nlohmann::json> Get(const JobRef& ref) override;
  // True while the job's runner still holds its lock.
  bool Settling(const JobRef& ref) override;
  StatusOr<JobDetail> Describe(const JobRef& ref) override;
  Status Logs(const nlohmann::json& job, const LogRequest& request, const LogSink& lines,
              const NoteSink& notes) override;
  StatusOr<nlohmann::json> Metrics(const nlohmann::json& job, const std::string& replica) override;
  StatusOr<LogChunk> ReadLog(const nlohmann::json& job, const std::string& replica, size_t from,
                             size_t max_bytes) override;

  // The stored job `ref` names: kNotFound or kInvalid (several kinds) with a message.
  StatusOr<local::JobKey> Find(const JobRef& ref) const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::optional<std::string> ns_;
  const Clock& clock_;
};

}  // namespace trainctl::jobs
