// Text rendering for the CLI: tables, `describe` output, condition and replica summaries.
// Pure functions over job and replica JSON (the stored or API objects); thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "jobs/why.h"

namespace trainctl::cli {

// Columns padded to the widest cell plus three spaces, like kubectl.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

// The job's state and why (jobs/why.h), as the tables and describe show them.
using jobs::JobState;
using jobs::JobWhy;
using jobs::JobWhyLine;

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
