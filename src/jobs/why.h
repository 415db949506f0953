// Why a job is where it is, read from its conditions alone: the state column, the
// ReplicasReady reason while replicas are not ready, and the engine's "First failure: …" text
// (docs/status-machine.md, "Why"). One reading for every source of jobs (local, cluster,
// history) and every reader (CLI, describe -o json, the SDK, the dashboard).
// Pure functions over job JSON; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainctl::jobs {

// The State column: the type of the last condition, as `kubectl get` shows it.
std::string JobState(const nlohmann::json& job);

// {"reason", "message"}: the ReplicasReady condition while it is False (else null),
// "firstFailure": the "First failure: …" text of the Failed or Restarting condition (else
// null), "since": when the reason was set.
nlohmann::json JobWhy(const nlohmann::json& job);

// The REASON column of `get -o wide`: "<reason>: <message>", else the first failure's first
// line, else ""; at most `max` bytes (cut on a UTF-8 boundary, then "…").
std::string JobWhyLine(const nlohmann::json& job, size_t max = 120);

// The replica the first-failure text names ("First failure: <name> (…"): the engine decided it
// (engine::FirstFailedIndex) when it wrote the condition. "" when the job names none.
std::string FirstFailureName(const nlohmann::json& job);

// The failure summary of describe -o json (JobDetail::failure) without its log lines: the
// replica FirstFailureName names, the condition's text as message, and the type, index,
// exitCode, reason and finishTime of its row in `replica_rows`. Null when the job names none.
nlohmann::json FailureSummary(const nlohmann::json& job, const nlohmann::json& replica_rows);

}  // namespace trainctl::jobs
