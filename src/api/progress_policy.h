// The opt-in hang detection of a job, read from its annotations (docs/status-machine.md):
//
//   trainctl.dev/progress-timeout-seconds: "600"   a whole number of seconds, 1 to 604800
//   trainctl.dev/progress-timeout-policy: Warn     Warn (default) | Fail | Restart
//
// A running job whose replicas write no new output for the timeout gets a Warning and, by the
// policy, is failed or restarted through the normal restart rules (backoffLimit counts it).
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "api/field_error.h"
#include "api/job.h"
#include "common/clock.h"

namespace trainctl::api {

inline constexpr const char* kProgressTimeoutAnnotation = "trainctl.dev/progress-timeout-seconds";
inline constexpr const char* kProgressPolicyAnnotation = "trainctl.dev/progress-timeout-policy";

enum class ProgressAction { kWarn, kFail, kRestart };
const char* ProgressActionName(ProgressAction action);

struct ProgressPolicy {
  Duration timeout{0};
  ProgressAction action = ProgressAction::kWarn;
};

// nullopt when the job has no timeout annotation, or when an annotation is invalid (errors go
// to `errors` when it is not null, with the annotation's field path).
std::optional<ProgressPolicy> ProgressPolicyOf(const Job& job, FieldErrorList* errors = nullptr);

}  // namespace trainctl::api
