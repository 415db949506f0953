// What the stored state of a local job means for a reader (`get`, `describe`, `wait`, the SDK):
// the truth when the runner is gone, and which replica failed first.
//
// Pure functions over the stored JSON (job.json, replicas.json); no I/O, no clock reads.
// Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::local {

// The reason on the Failed condition of a job whose runner died before the job finished.
inline constexpr const char* kRunnerLostReason = "RunnerLost";

struct LostRunnerUpdate {
  nlohmann::json job;       // the job with a Failed=True condition (reason RunnerLost)
  nlohmann::json replicas;  // replicas that were not finished: phase Unknown, state Lost
};

// A job that is not finished while no runner holds its lock has lost its runner (killed with
// SIGKILL, out of memory, machine reboot). Returns the stored objects rewritten to say so, or
// nullopt when the job is finished (or cannot be decoded: then it is left as it is).
// `runner_pid` is the pid last recorded in runner.lock (0 when unknown).
std::optional<LostRunnerUpdate> DecideLostRunner(const nlohmann::json& job,
                                                 const nlohmann::json& replicas, int runner_pid,
                                                 Time now);

// The replica that failed first, by the engine's one rule (engine::FirstFailedIndex: the
// earliest failing end, then the runner's exitSeq, then the name) over the stored records
// (a record that runs again after an in-place restart carries lastExitCode/lastFinishTime).
// nullopt when no replica failed. Returns the replica's stored record.
std::optional<nlohmann::json> FirstFailedReplica(const nlohmann::json& replicas);

// `trainctl patch` on a local job: a JSON merge patch that may change metadata.labels and
// metadata.annotations only (values: strings, or null to remove). Returns the accumulated
// metadata patch (`current` plus `body`), or kInvalid naming the field that cannot change.
StatusOr<nlohmann::json> MergeMetadataPatch(const nlohmann::json& current,
                                            const nlohmann::json& body);

// The job as readers see it: `patch`'s labels and annotations laid over the stored metadata.
nlohmann::json ApplyMetadataPatch(nlohmann::json job, const nlohmann::json& patch);

}  // namespace trainctl::local
