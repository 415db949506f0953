// Text rendering for the CLI: tables, `describe` output, condition and replica summaries.
// Pure functions over job and replica JSON (the stored or API objects); thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"

namespace trainctl::cli {

// The State column: the type of the last condition, as `kubectl get` shows it.
std::string JobState(const nlohmann::json& job);

// Columns padded to the widest cell plus three spaces, like kubectl.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

// Why the job is where it is (docs/status-machine.md, "Why"), from its conditions:
//   {"reason", "message"}: the ReplicasReady condition while it is False (else null),
//   "firstFailure": the "First failure: …" text of the Failed or Restarting condition (else
//   null), "since": when the reason was set.
nlohmann::json JobWhy(const nlohmann::json& job);
// The REASON column of `get -o wide`: "<reason>: <message>", else the first failure's first
// line, else ""; at most `max` bytes.
std::string JobWhyLine(const nlohmann::json& job, size_t max = 120);

// `wait --timeout` ran out: "timed out after <timeout> waiting for condition <condition>: <Kind>
// <ns>/<name> is <State>" and, when the job says why, its reason with its message (the failing
// replica, its exit code and last output) and the first failure. `job` may be null (never
// seen).
std::string FormatWaitTimeout(const nlohmann::json& job, const std::string& condition,
                              const std::string& timeout);

// `trainctl get` rows for jobs; `with_kind`/`with_namespace` add those columns, `wide` REASON.
std::string FormatJobTable(const std::vector<nlohmann::json>& jobs, bool with_kind,
                           bool with_namespace, Time now, bool wide = false);

// `trainctl describe`: metadata, spec summary, conditions, replicas and events.
std::string FormatDescribe(const nlohmann::json& job, const nlohmann::json& replicas,
                           const std::vector<nlohmann::json>& events, Time now);

// `trainctl run --dry-run` (local/dry_run.h's document): per replica its command, working
// directory, port, devices and the env beyond the caller's, each variable's source marked.
std::string FormatDryRun(const nlohmann::json& plan, const std::string& source);

// One line for the end of a run: "<Kind> <ns>/<name> <State> in <d>: <message>".
std::string FormatFinalLine(const nlohmann::json& job, Duration elapsed);

}  // namespace trainctl::cli
