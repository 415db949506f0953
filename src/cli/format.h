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

// `trainctl get` rows for jobs; `with_kind`/`with_namespace` add those columns.
std::string FormatJobTable(const std::vector<nlohmann::json>& jobs, bool with_kind,
                           bool with_namespace, Time now);

// `trainctl describe`: metadata, spec summary, conditions, replicas and events.
std::string FormatDescribe(const nlohmann::json& job, const nlohmann::json& replicas,
                           const std::vector<nlohmann::json>& events, Time now);

// One line for the end of a run: "<Kind> <ns>/<name> <State> in <d>: <message>".
std::string FormatFinalLine(const nlohmann::json& job, Duration elapsed);

}  // namespace trainctl::cli
