// Reading a local job for the data layer (LocalJobSource): the stored objects as they are, except
// that a job whose runner is gone is shown as Failed (RunnerLost), and its detail.
//
// ReadLocalJob reads files and never writes: recording a lost runner is the sweep's
// (jobs/local_sweep.h). LocalDetail is pure. Not thread-safe (a JobDir is not).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "jobs/job_source.h"
#include "local/state_store.h"

namespace trainctl::jobs {

struct LocalJobSnapshot {
  nlohmann::json job;
  nlohmann::json replicas = nlohmann::json::array();
  std::vector<nlohmann::json> events;
  bool runner_active = false;
  int runner_pid = 0;
  std::string path;     // the job's state folder
  std::string log_dir;  // <path>/logs
  // The runner is gone and the job had not finished: `job`, `replicas` and `events` show it
  // as Failed (RunnerLost), Lost and with the RunnerLost event, as the sweep will record it;
  // the files still hold what the runner last wrote.
  bool runner_lost = false;
};

// Reads job.json, replicas.json and events.jsonl (and runner.lock, without taking it). When the
// job is not finished and no runner holds the lock, returns it as local::DecideLostRunner
// rewrites it at `now` (runner_lost). Writes nothing.
StatusOr<LocalJobSnapshot> ReadLocalJob(const local::JobDir& dir, Time now, bool with_events);

// The RunnerLost event of `update` (a job whose runner is gone) at `now`.
nlohmann::json RunnerLostEvent(const nlohmann::json& lost_job, Time now);

// The last `n` lines of a text file (fewer when it is shorter; empty when it cannot be read).
std::vector<std::string> TailLines(const std::string& path, size_t n);

// The detail of a local job (job_source.h): the snapshot's replicas, each with its logFile, and
// `failed_replica` (local::FirstFailedReplica) with the last lines of its log as the failure.
// `workspaces`: {claim, path} of the folders standing in for the job's PVCs.
JobDetail LocalDetail(const LocalJobSnapshot& snapshot,
                      const std::optional<nlohmann::json>& failed_replica,
                      const std::vector<std::string>& failed_log_tail, nlohmann::json workspaces);

}  // namespace trainctl::jobs
