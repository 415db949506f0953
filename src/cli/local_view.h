// Reading a local job for the job commands and the SDK: the stored objects as they are, except
// that a job whose runner is gone is first recorded as Failed (RunnerLost), and the
// machine-readable `describe -o json` document.
//
// ReadLocalJob does file I/O (and may write the job's state folder once, under the runner
// lock); DescribeDocument is pure. Not thread-safe (a JobDir is not).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "local/state_store.h"

namespace trainctl::cli {

struct LocalJobSnapshot {
  nlohmann::json job;
  nlohmann::json replicas = nlohmann::json::array();
  std::vector<nlohmann::json> events;
  bool runner_active = false;
  int runner_pid = 0;
  std::string path;     // the job's state folder
  std::string log_dir;  // <path>/logs
};

// Reads job.json, replicas.json and events.jsonl. When the job is not finished and no runner
// holds the lock, takes the lock, records the job as Failed (reason RunnerLost) and its
// unfinished replicas as Lost, and returns that. A failed write is returned as an error.
StatusOr<LocalJobSnapshot> ReadLocalJob(local::JobDir& dir, Time now, bool with_events);

// The last `n` lines of a text file (fewer when it is shorter; empty when it cannot be read).
std::vector<std::string> TailLines(const std::string& path, size_t n);

// How many log lines the failure summary carries.
inline constexpr size_t kFailureLogLines = 20;

// `describe -o json`: {job, replicas (each with logFile), events, runner {active, pid}, path,
// logDir, failure}. `failure` is the first failed replica (local::FirstFailedReplica) with
// name, type, index, exitCode, finishTime, message and lastLogLines, or null.
nlohmann::json DescribeDocument(const LocalJobSnapshot& snapshot,
                                const std::optional<nlohmann::json>& failed_replica,
                                const std::vector<std::string>& failed_log_tail);

}  // namespace trainctl::cli
